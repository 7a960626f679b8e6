//! Any text as an SQL92 filter: parsing, and evaluating what parses, must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stratus_compat::filter::sql92::Sql92Filter;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(filter) = Sql92Filter::parse(&text) {
        let _ = (
            filter.matches(&|_| None),
            filter.matches(&|_| Some("1")),
            filter.matches(&|_| Some(&text)),
        );
    }
});
