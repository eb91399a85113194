//! Wire formats: zero-copy views and owned `Repr`s (STYLE.md §1, after smoltcp's `wire`).
//!
//! Every header has a view `Packet<T: AsRef<[u8]>>` whose `new_checked` validates the length once,
//! after which no accessor panics, and an owned `Repr` with `parse`, `emit` and `buffer_len`.

pub mod ethernet;
