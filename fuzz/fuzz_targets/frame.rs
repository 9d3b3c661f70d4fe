//! `frame` on any bytes: it never panics, and what it returns is consistent with the body.
//!
//! Properties: a body that frames is UTF-8 and within the nesting limit; a single message is one
//! message, a batch at least one; framing is the same with the limit raised or with the
//! nesting pre-checked (`Nesting::Checked`); every slice a message holds lies inside the body,
//! every string unescapes to text that compares equal to it, every integer id is `-?[0-9]+`, and
//! the `arguments` range of a call's params is exactly what `headers::member` finds there.
#![no_main]

use _rust::frame::{frame, too_deep, Id, Message, Nesting};
use _rust::headers::{is_object, member};
use _rust::json::JStr;
use libfuzzer_sys::fuzz_target;

const DEPTH: i64 = 64;

fn python_digits() -> usize {
    4300
}

fn inside(body: &[u8], part: &[u8]) -> bool {
    let (start, end) = (body.as_ptr() as usize, body.as_ptr() as usize + body.len());
    let at = part.as_ptr() as usize;
    part.is_empty() || (start <= at && at + part.len() <= end)
}

fn check_text(body: &[u8], text: &JStr<'_>) {
    assert!(inside(body, text.raw));
    let unescaped = text.unescape();
    assert!(
        text.eq_bytes(unescaped.as_bytes()),
        "{text:?} vs {unescaped:?}"
    );
    assert_eq!(text.escaped, text.raw.contains(&b'\\'));
}

fn check_id(body: &[u8], id: Option<&Id<'_>>) {
    match id {
        None => {}
        Some(Id::Str(text)) => check_text(body, text),
        Some(Id::Int(digits)) => {
            assert!(inside(body, digits));
            let digits = digits.strip_prefix(b"-").unwrap_or(digits);
            assert!(!digits.is_empty() && digits.iter().all(u8::is_ascii_digit));
        }
    }
}

fn check_message(body: &[u8], message: &Message<'_>) {
    match message {
        Message::Call {
            id,
            method,
            name,
            version,
            params,
            arguments,
        } => {
            check_id(body, id.as_ref());
            check_text(body, method);
            for text in [name, version].into_iter().flatten() {
                check_text(body, text);
            }
            let Some(params) = *params else {
                assert!(arguments.is_none());
                return;
            };
            assert!(inside(body, params));
            let found = if is_object(params) {
                member(params, b"arguments")
            } else {
                None
            };
            match (arguments, found) {
                (None, None) => {}
                (Some((start, end)), Some(found)) => {
                    assert_eq!(&params[*start..*end], found);
                    assert_eq!(found.as_ptr() as usize - params.as_ptr() as usize, *start);
                }
                other => panic!("arguments range {other:?}"),
            }
        }
        Message::Result { id, payload } => {
            check_id(body, Some(id));
            assert!(inside(body, payload) && !payload.is_empty());
        }
        Message::Error { id, payload } => {
            check_id(body, id.as_ref());
            assert!(inside(body, payload) && !payload.is_empty());
        }
        Message::Invalid { id, reason } => {
            check_id(body, id.as_ref());
            assert!(!reason.is_empty());
        }
    }
}

fuzz_target!(|body: &[u8]| {
    let framed = frame(body, Nesting::Limit(DEPTH), python_digits);
    if let Ok(framed) = &framed {
        assert!(
            std::str::from_utf8(body).is_ok(),
            "framed a body that is not UTF-8"
        );
        assert!(!too_deep(body, DEPTH), "framed a body nested too deep");
        if framed.batch {
            assert!(!framed.messages.is_empty());
        } else {
            assert_eq!(framed.messages.len(), 1);
        }
        for message in &framed.messages {
            check_message(body, message);
        }
        assert_eq!(
            frame(body, Nesting::Limit(DEPTH + 1), python_digits).as_ref(),
            Ok(framed)
        );
        assert_eq!(
            frame(body, Nesting::Checked, python_digits).as_ref(),
            Ok(framed)
        );
    } else if !too_deep(body, DEPTH) {
        // The depth aside, refusing does not depend on the limit.
        assert_eq!(frame(body, Nesting::Checked, python_digits), framed);
    }
});
