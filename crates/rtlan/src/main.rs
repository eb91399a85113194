//! `rtlan`: the one binary.
fn main() {}
