//! `parse_head` on any bytes: it never panics, refuses only with its three statuses, and a head
//! it accepts, written out again as `name: value` lines, parses to the same head (a joined
//! value, such as `a, ` from `Connection: a` and an empty `Connection:`, comes back trimmed).
//! `find_head` on the same bytes as a connection's buffer, with limits taken from its first
//! bytes: it never panics, refuses only with 431, and a head it finds follows only CRLFs, ends
//! at the first blank line and keeps within both limits.
#![no_main]

use _rust::http::{find_head, parse_head, Head};
use libfuzzer_sys::fuzz_target;

fn latin1(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)).expect("latin-1"))
        .collect()
}

fn written(head: &Head) -> Vec<u8> {
    let mut out = latin1(&head.method);
    out.push(b' ');
    out.extend(latin1(&head.target));
    out.extend(format!(" HTTP/1.{}", head.minor).as_bytes());
    for (name, value) in &head.headers {
        out.extend(b"\r\n");
        out.extend(latin1(name));
        out.extend(b": ");
        out.extend(latin1(value));
    }
    out
}

const JOINED: [&str; 3] = ["connection", "content-length", "transfer-encoding"];

fn trimmed(head: &Head) -> Head {
    let mut head = head.clone();
    for (name, value) in &mut head.headers {
        if JOINED.contains(&name.as_str()) {
            *value = value.trim_matches([' ', '\t']).to_owned();
        }
    }
    head
}

fn found(data: &[u8]) {
    let limit = usize::from(data.first().copied().unwrap_or(0));
    let max_lines = usize::from(data.get(1).copied().unwrap_or(0) % 16);
    match find_head(data, limit, max_lines) {
        Ok((skip, end)) => {
            assert!(skip % 2 == 0 && data[..skip].chunks(2).all(|pair| pair == b"\r\n"));
            let rest = &data[skip..];
            let first = rest.windows(4).position(|w| w == b"\r\n\r\n");
            assert_eq!(end, first);
            if let Some(end) = end {
                assert!(end <= limit);
                assert!(rest[..end].windows(2).filter(|w| *w == b"\r\n").count() <= max_lines);
            } else {
                assert!(rest.len() <= limit + 3);
            }
        }
        Err(refusal) => assert_eq!(refusal.status, 431, "{refusal:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    found(data);
    match parse_head(data) {
        Ok(head) => {
            assert!(head.minor <= 1);
            assert!(!(head.chunked && head.content_length.is_some()));
            assert!(head.content_length.is_none_or(|n| n < 10u64.pow(18)));
            for (name, value) in &head.headers {
                assert_eq!(*name, name.to_ascii_lowercase());
                let joined = JOINED.contains(&name.as_str());
                assert!(joined || value.trim_matches([' ', '\t']) == value);
            }
            let again = parse_head(&written(&head));
            assert_eq!(
                again,
                Ok(trimmed(&head)),
                "{:?}",
                String::from_utf8_lossy(data)
            );
        }
        Err(refusal) => {
            assert!(matches!(refusal.status, 400 | 501 | 505), "{refusal:?}");
            assert!(!refusal.reason.is_empty());
        }
    }
});
