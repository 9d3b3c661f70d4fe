//! Token verification with fixed keys, on the input as a token and on mutations of a valid one.
//!
//! Properties: verification never panics; a token that verifies is exactly the token its key
//! signs for its own signed part (so it was signed by that key, in the one canonical encoding),
//! carries its payload in canonical base64url, and is neither expired nor from the future; a
//! minted token verifies to its payload; a mutation of a valid token that keeps its signed part
//! but changes its MAC text never verifies.
#![no_main]

use _rust::token::{b64url, mint, parse, sign, verify, Rejection, CLOCK_SKEW, MAX_TOKEN};
use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

const KEYS: [(&str, &[u8]); 2] = [("k1", b"fuzz-key-0123456789"), ("k2", b"")];
const MAX_AGE: i64 = 600;

fn key_for(kid: &str) -> Option<&'static [u8]> {
    KEYS.iter().find(|(id, _)| *id == kid).map(|(_, key)| *key)
}

/// Checks the verdict on `token`; returns whether it verified.
fn check(token: &str, now: i64) -> bool {
    let verdict = verify(token, key_for, now, MAX_AGE);
    if !matches!(verdict, Err(Rejection::Malformed)) {
        assert!(
            parse(token, MAX_TOKEN).is_ok(),
            "judged on a malformed token"
        );
    }
    let Ok((payload, issued_at)) = verdict else {
        return false;
    };
    let parsed = parse(token, MAX_TOKEN).expect("a verified token parses");
    let (signed, _) = token.rsplit_once('.').expect("five parts");
    assert_eq!(sign(key_for(parsed.kid).expect("known"), signed), token);
    assert!(signed.ends_with(&format!(".{}", b64url(&payload))));
    let issued_at = i64::try_from(issued_at).expect("below 10**15");
    assert!(issued_at - CLOCK_SKEW <= now && now - issued_at <= MAX_AGE);
    true
}

fn mutate(token: &str, input: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    let mut bytes = token.as_bytes().to_vec();
    for _ in 0..input.int_in_range(1..=3)? {
        let at = input.int_in_range(0..=bytes.len())?;
        let byte = *input.choose(b"AQgw_-.=v1k0/+Z9\x80")?;
        match input.int_in_range(0..=3)? {
            0 if at < bytes.len() => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => bytes.truncate(at),
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fuzz_target!(|data: &[u8]| {
    let now = 1_700_000_000;
    check(&String::from_utf8_lossy(data), now);

    let mut input = Unstructured::new(data);
    let Ok((kid, key)) = input.choose(&KEYS).copied() else {
        return;
    };
    let issued_at = now as u64 - input.int_in_range(0..=700u64).unwrap_or(0);
    let payload = input
        .bytes(input.len().min(64))
        .unwrap_or_default()
        .to_vec();
    let token = mint(kid, key, &payload, issued_at).expect("a valid key id and time");
    let young = now - issued_at as i64 <= MAX_AGE;
    assert_eq!(check(&token, now), young);
    if young {
        assert_eq!(
            verify(&token, key_for, now, MAX_AGE).map(|v| v.0),
            Ok(payload)
        );
    }
    let Ok(mutated) = mutate(&token, &mut input) else {
        return;
    };
    let verified = check(&mutated, now);
    let (signed, mac) = token.rsplit_once('.').expect("five parts");
    if let Some((mutated_signed, mutated_mac)) = mutated.rsplit_once('.') {
        if mutated_signed == signed && mutated_mac != mac {
            assert!(!verified, "another MAC text verified: {mutated}");
        }
    }
});
