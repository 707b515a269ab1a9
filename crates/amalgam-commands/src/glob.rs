//! Redis's glob matching (`util.c`, `stringmatchlen`): `*`, `?`, `[…]`
//! with ranges and `^`, `\` escapes. Used by CONFIG GET, and by KEYS and
//! SCAN to tell a pattern that names one key from one that needs
//! iteration.

/// Nesting of `*` past which Redis gives up (its protection against
/// abusive patterns): no match.
const STAR_NESTING_MAX: usize = 1000;

/// True if `pattern` has a character with a glob meaning.
pub fn has_wildcards(pattern: &[u8]) -> bool {
    pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
}

/// Redis's `stringmatchlen(pattern, string, nocase)`.
///
/// Work: each `*` tries every suffix of the string, but once the rest of
/// the pattern failed from every position no earlier `*` retries
/// (Redis's `skipLongerMatches`), so the cost is O(pattern × string).
pub fn matches(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    match_impl(pattern, string, nocase, &mut skip_longer, 0)
}

fn fold(b: u8, nocase: bool) -> u8 {
    if nocase {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

fn match_impl(pat: &[u8], s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: usize) -> bool {
    if nesting > STAR_NESTING_MAX {
        return false;
    }
    let (mut p, mut i) = (0usize, 0usize);
    while p < pat.len() && i < s.len() {
        match pat[p] {
            b'*' => {
                while p + 1 < pat.len() && pat[p + 1] == b'*' {
                    p += 1;
                }
                if p + 1 == pat.len() {
                    return true;
                }
                while i < s.len() {
                    if match_impl(&pat[p + 1..], &s[i..], nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    i += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => i += 1,
            b'[' => {
                p += 1;
                let not = pat.get(p) == Some(&b'^');
                if not {
                    p += 1;
                }
                let mut hit = false;
                let c = s[i];
                loop {
                    if p >= pat.len() {
                        // Unterminated class: Redis steps back onto its last byte.
                        p = pat.len() - 1;
                        break;
                    }
                    if pat[p] == b'\\' && pat.len() - p >= 2 {
                        p += 1;
                        if pat[p] == c {
                            hit = true;
                        }
                    } else if pat[p] == b']' {
                        break;
                    } else if pat.len() - p >= 3 && pat[p + 1] == b'-' {
                        let (mut lo, mut hi) = (pat[p], pat[p + 2]);
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        let (lo, hi, c) = (fold(lo, nocase), fold(hi, nocase), fold(c, nocase));
                        p += 2;
                        if (lo..=hi).contains(&c) {
                            hit = true;
                        }
                    } else if fold(pat[p], nocase) == fold(c, nocase) {
                        hit = true;
                    }
                    p += 1;
                }
                if hit == not {
                    return false;
                }
                i += 1;
            }
            b => {
                let mut b = b;
                if b == b'\\' && pat.len() - p >= 2 {
                    p += 1;
                    b = pat[p];
                }
                if fold(b, nocase) != fold(s[i], nocase) {
                    return false;
                }
                i += 1;
            }
        }
        p += 1;
        if i == s.len() {
            while p < pat.len() && pat[p] == b'*' {
                p += 1;
            }
            break;
        }
    }
    p == pat.len() && i == s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let m = |p: &str, s: &str| matches(p.as_bytes(), s.as_bytes(), false);
        assert!(m("*", "anything"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h\\*llo", "h*llo"));
        assert!(!m("h\\*llo", "hello"));
        assert!(m("a*", "a"));
        assert!(!m("", "a"));
        assert!(m("", ""));
        assert!(matches(b"MAX*", b"maxmemory", true));
        assert!(!m(&"a*".repeat(2000), &"a".repeat(3000)));
        assert!(has_wildcards(b"k*") && !has_wildcards(b"plain"));
    }
}
