//! The `stratus` binary.
fn main() {}
