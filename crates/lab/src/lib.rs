//! The lab testbed (DESIGN.md §5): topology files become network namespaces, veth links and
//! emulated link rates; switches run inside; everything is removed afterwards.
