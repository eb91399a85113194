//! Linux shells (DESIGN.md §2): AF_PACKET ports, timers and the switch's data-plane loop.
