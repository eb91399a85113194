//! Unit vectors for every spelling of the grammar, every refusal message, and format → parse
//! round trips.

use std::time::Duration;

use proptest::prelude::*;

use super::*;

#[test]
fn every_rate_spelling() {
    let cases: [(&str, u64); 22] = [
        ("64000bit", 64_000),
        ("1BIT", 1),
        ("512kbit", 512_000),
        ("100mbit", 100_000_000),
        ("100Mbit", 100_000_000),
        ("1gbit", 1_000_000_000),
        ("1Gbit", 1_000_000_000),
        ("2tbit", 2_000_000_000_000),
        ("98.6mbit", 98_600_000),
        ("12.5mbit", 12_500_000),
        (".5kbit", 500),
        ("1.5 mbit", 1_500_000),
        (" 7bit/s ", 7),
        ("64kbit/s", 64_000),
        ("100Mbit/s", 100_000_000),
        ("10Gbit/s", 10_000_000_000),
        ("1Tbit/s", 1_000_000_000_000),
        ("1B/s", 8),
        ("1.5kB/s", 12_000),
        ("2KB/s", 16_000),
        ("12.5MB/s", 100_000_000),
        ("1GB/s", 8_000_000_000),
    ];
    for (text, bps) in cases {
        assert_eq!(parse_rate(text), Ok(bps), "{text}");
    }
}

#[test]
fn rates_are_exact() {
    assert_eq!(exact_rate("98.6mbit"), Ok(Q::int(98_600_000)));
    assert_eq!(exact_rate("0.5bit"), Ok(Q::new(1, 2).unwrap()));
    assert_eq!(
        parse_rate("0.5bit"),
        Err(UnitError::NotWhole {
            text: "0.5bit".into(),
            unit: "bit/s"
        })
    );
    assert_eq!(exact_rate("0mbit"), Ok(Q::ZERO));
}

#[test]
fn every_size_spelling() {
    let cases: [(&str, u64); 9] = [
        ("51514B", 51_514),
        ("64kB", 64_000),
        ("64KB", 64_000),
        ("1.5MB", 1_500_000),
        ("2GB", 2_000_000_000),
        ("128KiB", 131_072),
        ("1MiB", 1 << 20),
        ("1GiB", 1 << 30),
        ("0.5KiB", 512),
    ];
    for (text, bytes) in cases {
        assert_eq!(parse_size(text), Ok(bytes), "{text}");
    }
    assert_eq!(exact_size("0.5B"), Ok(Q::new(1, 2).unwrap()));
    assert!(matches!(
        parse_size("0.5B"),
        Err(UnitError::NotWhole { unit: "bytes", .. })
    ));
}

#[test]
fn every_duration_spelling() {
    let cases: [(&str, Duration); 9] = [
        ("100ns", Duration::from_nanos(100)),
        ("45us", Duration::from_micros(45)),
        ("45µs", Duration::from_micros(45)),
        ("45μs", Duration::from_micros(45)),
        ("0.1ms", Duration::from_micros(100)),
        ("10ms", Duration::from_millis(10)),
        ("10MS", Duration::from_millis(10)),
        ("1.5s", Duration::from_millis(1500)),
        ("0s", Duration::ZERO),
    ];
    for (text, d) in cases {
        assert_eq!(parse_duration(text), Ok(d), "{text}");
    }
    assert_eq!(exact_duration("0.1ms"), Ok(Q::micros(100)));
    assert_eq!(
        exact_duration("0.5ns"),
        Ok(Q::new(1, 2_000_000_000).unwrap())
    );
    assert!(matches!(
        parse_duration("0.5ns"),
        Err(UnitError::NotWhole { unit: "ns", .. })
    ));
}

fn message(r: Result<impl std::fmt::Debug, UnitError>) -> String {
    r.expect_err("must be refused").to_string()
}

#[test]
fn bps_spellings_are_refused_naming_both_readings() {
    assert_eq!(
        message(parse_rate("12.5mbps")),
        "`12.5mbps` is ambiguous: tc(8) reads it as 12.5 megabytes/s = 100 Mbit/s, most readers \
         as 12.5 Mbit/s; write `100mbit` or `12.5mbit`"
    );
    assert_eq!(
        message(parse_rate("12500kbps")),
        "`12500kbps` is ambiguous: tc(8) reads it as 12500 kilobytes/s = 100000 kbit/s, most \
         readers as 12500 kbit/s; write `100000kbit` or `12500kbit`"
    );
    assert_eq!(
        message(parse_rate("1Gbps")),
        "`1Gbps` is ambiguous: tc(8) reads it as 1 gigabytes/s = 8 Gbit/s, most readers as 1 \
         Gbit/s; write `8gbit` or `1gbit`"
    );
    assert_eq!(
        message(parse_rate("100bps")),
        "`100bps` is ambiguous: tc(8) reads it as 100 bytes/s = 800 bit/s, most readers as 100 \
         bit/s; write `800bit` or `100bit`"
    );
    assert!(message(parse_rate("2tbps")).contains("2 terabytes/s = 16 Tbit/s"));
    assert!(message(parse_rate("12.5mb/s")).contains("write `100mbit` or `12.5mbit`"));
    assert!(message(parse_rate("1kb/s")).contains("ambiguous"));
}

#[test]
fn tc_size_spellings_are_refused_naming_both_readings() {
    assert_eq!(
        message(parse_size("64kb")),
        "`64kb` is ambiguous: tc(8) reads it as 64 KiB = 65536 bytes, most readers as 64 kbit = \
         8000 bytes; write `64KiB` or `8kB`"
    );
    assert_eq!(
        message(parse_size("64k")),
        "`64k` is ambiguous: tc(8) reads it as 64 KiB = 65536 bytes, most readers as 64 kB = \
         64000 bytes; write `64KiB` or `64kB`"
    );
    assert_eq!(
        message(parse_size("2m")),
        "`2m` is ambiguous: tc(8) reads it as 2 MiB = 2097152 bytes, most readers as 2 MB = \
         2000000 bytes; write `2MiB` or `2MB`"
    );
    assert_eq!(
        message(parse_size("1Mb")),
        "`1Mb` is ambiguous: tc(8) reads it as 1 MiB = 1048576 bytes, most readers as 1 Mbit = \
         125000 bytes; write `1MiB` or `0.125MB`"
    );
    assert_eq!(
        message(parse_size("100b")),
        "`100b` is ambiguous: tc(8) reads it as 100 bytes, most readers as 100 bits = 12.5 \
         bytes; write `100B` (bytes)"
    );
    for text in ["1K", "1g", "1G", "1gb", "1Kb", "1M", "1mb"] {
        assert!(message(parse_size(text)).contains("is ambiguous"), "{text}");
    }
}

#[test]
fn other_refusals() {
    assert_eq!(
        message(parse_rate("fast")),
        "`fast` does not start with a decimal number"
    );
    assert_eq!(
        message(parse_rate("1.2.3mbit")),
        "`1.2.3mbit` does not start with a decimal number"
    );
    assert_eq!(
        message(parse_rate("-1mbit")),
        "`-1mbit` does not start with a decimal number"
    );
    assert_eq!(
        message(parse_rate("10furlong")),
        format!("`10furlong`: unknown unit `furlong` (expected one of {RATE_UNITS})")
    );
    assert_eq!(
        message(parse_rate("64000")),
        format!("`64000` has no unit: write it as `64000bit` or see docs/units.md ({RATE_UNITS})")
    );
    assert_eq!(
        message(parse_size("1514")),
        format!("`1514` has no unit: write it as `1514B` or see docs/units.md ({SIZE_UNITS})")
    );
    assert_eq!(
        message(parse_duration("10")),
        format!("`10` has no unit: write it as `10ms` or see docs/units.md ({DURATION_UNITS})")
    );
    assert_eq!(
        message(parse_duration("10h")),
        format!("`10h`: unknown unit `h` (expected one of {DURATION_UNITS})")
    );
    assert_eq!(
        message(parse_size("1mbit")),
        format!("`1mbit`: unknown unit `mbit` (expected one of {SIZE_UNITS})")
    );
    assert_eq!(
        message(parse_rate("0mbit")),
        "`0mbit`: a rate must be greater than zero"
    );
    assert_eq!(
        message(parse_rate("999999999999999999999mbit")),
        "`999999999999999999999mbit` is out of range"
    );
    assert_eq!(
        message(parse_rate("20000000tbit")),
        "`20000000tbit` is out of range"
    );
    assert_eq!(
        message(parse_size("0.3B")),
        "`0.3B` is not a whole number of bytes"
    );
    assert_eq!(
        message(parse_duration("1.0000000001s")),
        "`1.0000000001s` is not a whole number of ns"
    );
}

#[test]
fn formats() {
    assert_eq!(format_rate(100_000_000), "100mbit");
    assert_eq!(format_rate(98_600_001), "98.600001mbit");
    assert_eq!(format_rate(1_500_000_000), "1.5gbit");
    assert_eq!(format_rate(999), "999bit");
    assert_eq!(format_size(131_072), "128KiB");
    assert_eq!(format_size(1500), "1.5kB");
    assert_eq!(format_size(999), "999B");
    assert_eq!(format_duration(Duration::from_micros(100)), "100us");
    assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    assert_eq!(format_duration(Duration::from_secs(300)), "300s");
    assert_eq!(
        format_duration(Duration::from_nanos(1_500_000_001)),
        "1500000001ns"
    );
    assert_eq!(format_duration(Duration::ZERO), "0ns");
}

proptest! {
    #[test]
    fn rate_round_trips(bps in 1u64..=u64::MAX) {
        prop_assert_eq!(parse_rate(&format_rate(bps)), Ok(bps));
    }

    #[test]
    fn size_round_trips(bytes in any::<u64>()) {
        prop_assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
    }

    #[test]
    fn duration_round_trips(ns in any::<u64>()) {
        let d = Duration::from_nanos(ns);
        prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
    }

    #[test]
    fn decimal_text_is_exact(int in 0u64..1_000_000, frac in 0u32..1000) {
        let text = format!("{int}.{frac:03}mbit");
        let want = u128::from(int) * 1_000_000 + u128::from(frac) * 1000;
        prop_assert_eq!(parse_rate(&text).ok().map(u128::from), (want > 0).then_some(want));
    }
}
