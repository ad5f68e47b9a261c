//! Feeds arbitrary text to the CQL parser (issue 11): every input must give statements or a
//! `ParseError` whose message renders, never a panic, a stack overflow or a hang. The input is
//! taken as UTF-8 with invalid bytes replaced, as a driver's string would arrive.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = helenus_cql::parse_script(&text) {
        let _ = e.to_string();
    }
    match helenus_cql::parse(&text) {
        Ok(parsed) => {
            // Rendering what was parsed must not panic either (DESCRIBE and errors use it).
            let _ = format!("{:?}", parsed.statement);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
