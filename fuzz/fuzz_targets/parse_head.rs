//! `parse_head` on any bytes: it never panics, refuses only with its three statuses, and a head
//! it accepts, written out again as `name: value` lines, parses to the same head (a joined
//! value, such as `a, ` from `Connection: a` and an empty `Connection:`, comes back trimmed).
#![no_main]

use _rust::http::{parse_head, Head};
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

fuzz_target!(|data: &[u8]| {
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
