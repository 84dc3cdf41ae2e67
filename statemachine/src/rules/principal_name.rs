//! Principal names have one normal form (docs/SPEC.md §9.1).
//!
//! A principal's name is what audit rows, approvals, claims and owner names are attributed to,
//! so a reader must be able to tell two principals apart by their names. Names that differ only
//! by invisible characters (`"admin\u{200b}"`), by surrounding spaces (`" admin"`), by a
//! compatibility form (fullwidth `ａｄｍｉｎ`) or by a look-alike letter (Cyrillic `а` for Latin
//! `a`) read as the same name and are not. So a name is taken only in its NFKC form, without
//! whitespace, control or format (invisible) characters, and only when its *skeleton* (below)
//! differs from every reserved name's and every other existing principal's.
//!
//! The same rule serves the API's principals (tokens) and the engine's users (usernames, §13):
//! each is one namespace of names that audit rows carry. The API normalises (NFKC) what a
//! client sends and proposes the normal form; `apply` refuses a name that is not in it, so a
//! forwarded or replayed command cannot carry another form.
//!
//! NFKC and the character classes follow the Unicode tables of the `unicode-normalization` and
//! `unicode-properties` crates of this build: every node must run the same build (as for the
//! lowercasing of docs/SPEC.md §13.4).

use crate::rules::validate;
use crate::wire::rejection::Rejection;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Names no principal may take, nor any name confusable with them: the bootstrap admin token's
/// principal, and names a reader would take for the system itself. (The cluster's own actors
/// are `raftlane:…`: [`RESERVED_PREFIX`].)
pub const RESERVED: [&str; 4] = ["admin", "root", "system", "raftlane"];

/// The prefix of the cluster's own actors (the leader's timers): no principal's name starts
/// with it, or with anything confusable with it.
pub const RESERVED_PREFIX: &str = "raftlane:";

/// `name` in its normal form: NFKC. What the API proposes in place of what a client sent.
pub fn normal_form(name: &str) -> String {
    name.nfkc().collect()
}

/// Whether `c` shows nothing (or nothing of its own) where it stands: format characters
/// (zero-width spaces and joiners, bidirectional controls, the byte-order mark, soft hyphens,
/// tags...), and the default-ignorable characters of other categories (variation selectors,
/// the combining grapheme joiner, Hangul fillers, Mongolian free variation selectors).
fn invisible(c: char) -> bool {
    c.general_category() == GeneralCategory::Format
        || matches!(
            c,
            '\u{034f}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{ffa0}'
                | '\u{e0100}'..='\u{e01ef}'
        )
}

/// The checks of a name's own characters (no state needed): a valid name
/// ([`validate::name`]), in NFKC, without whitespace, control or invisible characters, and not
/// confusable with a reserved name. `Rejection::Invalid` naming `field` and the reason.
pub fn check_form(field: &str, name: &str) -> Result<(), Rejection> {
    validate::name(field, name)?;
    if let Some(c) = name.chars().find(|c| c.is_whitespace()) {
        return Err(Rejection::invalid(
            field,
            format!("must not contain whitespace (U+{:04X})", u32::from(c)),
        ));
    }
    if let Some(c) = name.chars().find(|&c| c.is_control() || invisible(c)) {
        return Err(Rejection::invalid(
            field,
            format!(
                "must not contain invisible or control characters (U+{:04X})",
                u32::from(c)
            ),
        ));
    }
    if let Some(c) = name.chars().find(|c| {
        matches!(
            c.general_category(),
            GeneralCategory::Unassigned | GeneralCategory::PrivateUse
        )
    }) {
        return Err(Rejection::invalid(
            field,
            format!(
                "must not contain unassigned or private-use characters (U+{:04X})",
                u32::from(c)
            ),
        ));
    }
    if normal_form(name) != name {
        return Err(Rejection::invalid(
            field,
            format!(
                "must be in Unicode normal form NFKC ('{}')",
                normal_form(name)
            ),
        ));
    }
    let skeleton = skeleton(name);
    if let Some(reserved) = RESERVED.iter().find(|r| skeleton == self::skeleton(r)) {
        return Err(Rejection::invalid(
            field,
            format!("is reserved, or looks like the reserved name '{reserved}'"),
        ));
    }
    if skeleton.starts_with(&self::skeleton(RESERVED_PREFIX)) {
        return Err(Rejection::invalid(
            field,
            format!("'{RESERVED_PREFIX}…' names the cluster's own actors"),
        ));
    }
    Ok(())
}

/// [`check_form`] for a name held by a namespace without the reserved words of the API's
/// principals: the engine's usernames, whose bootstrap user is `admin` (messagefoundry's own);
/// only the cluster's `raftlane:` prefix is reserved there.
pub fn check_username_form(field: &str, name: &str) -> Result<(), Rejection> {
    match check_form(field, name) {
        Err(Rejection::Invalid { reason, .. }) if reason.starts_with("is reserved") => Ok(()),
        other => other,
    }
}

/// Refused when `name` is confusable with another name in `existing` (one that is not `name`
/// itself: putting a principal again under its own name replaces it).
pub fn check_distinct<'a>(
    field: &str,
    name: &str,
    existing: impl IntoIterator<Item = &'a str>,
) -> Result<(), Rejection> {
    let skeleton = skeleton(name);
    for other in existing {
        if other != name && self::skeleton(other) == skeleton {
            return Err(Rejection::invalid(
                field,
                format!("looks like the existing name '{other}'"),
            ));
        }
    }
    Ok(())
}

/// What a name looks like: NFKC, with the common Cyrillic and Greek look-alikes of Latin
/// letters mapped to those letters, lowercased. Two names with one skeleton are confusable.
pub fn skeleton(name: &str) -> String {
    normal_form(name)
        .chars()
        .map(latin_capital_look_alike)
        .flat_map(char::to_lowercase)
        .map(latin_small_look_alike)
        .collect()
}

/// Capital Cyrillic and Greek letters that look like a capital Latin letter, mapped before
/// lowercasing (Greek `Ν` looks like `N`, its small `ν` like `v`).
fn latin_capital_look_alike(c: char) -> char {
    match c {
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'С' | 'Ϲ' => 'C',
        'Е' | 'Ε' => 'E',
        'Н' | 'Η' => 'H',
        'І' | 'Ӏ' | 'Ι' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'Ν' => 'N',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'Ԛ' => 'Q',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Ԝ' => 'W',
        'Х' | 'Χ' => 'X',
        'У' | 'Ү' | 'Υ' => 'Y',
        'Ζ' => 'Z',
        other => other,
    }
}

/// Small Cyrillic and Greek letters (and a few Latin variants) that look like a small Latin
/// letter in common fonts. Deliberately small: letters of other scripts, and digits, are left
/// alone, so `user1` and `userl` stay two names.
fn latin_small_look_alike(c: char) -> char {
    match c {
        // Cyrillic
        'а' => 'a',
        'в' | 'ь' => 'b',
        'с' => 'c',
        'ԁ' => 'd',
        'е' => 'e',
        'һ' | 'н' => 'h',
        'і' | 'ӏ' => 'i',
        'ј' => 'j',
        'к' => 'k',
        'м' => 'm',
        'п' => 'n',
        'о' => 'o',
        'р' => 'p',
        'ԛ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'т' => 't',
        'у' | 'ү' => 'y',
        'ԝ' => 'w',
        'х' => 'x',
        // Greek
        'α' => 'a',
        'ϲ' => 'c',
        'ε' => 'e',
        'η' => 'n',
        'ι' => 'i',
        'ϳ' => 'j',
        'κ' => 'k',
        'μ' | 'υ' => 'u',
        'ν' => 'v',
        'ο' => 'o',
        'ρ' => 'p',
        'τ' => 't',
        'χ' => 'x',
        'γ' => 'y',
        'ω' => 'w',
        // Latin variants
        'ı' => 'i',
        'ɑ' => 'a',
        'ɡ' => 'g',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(name: &str) -> String {
        match check_form("name", name) {
            Err(Rejection::Invalid { field, reason }) => {
                assert_eq!(field, "name");
                reason
            }
            other => panic!("{name:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn look_alikes_of_reserved_names_are_refused() {
        for name in [
            "admin",
            "ADMIN",
            "аdmin",      // Cyrillic а
            "ΑDΜΙΝ",      // Greek capitals
            "ａｄｍｉｎ", // fullwidth: not NFKC
            "Root",
            "sуstem", // Cyrillic у
            "raftlane",
            "raftlane:timer",
            "RAFTLANE:x",
        ] {
            refused(name);
        }
    }

    #[test]
    fn spaces_and_invisible_characters_are_refused() {
        for name in [
            " admin",
            "admin ",
            "ad min",
            "admin\u{200b}",
            "a\u{200d}b",
            "a\u{202e}b",
            "a\u{2066}b",
            "\u{feff}a",
            "a\u{00ad}b",
            "a\u{fe0f}",
            "a\u{e0041}",
            "a\u{3164}",
            "a\u{a0}b",
            "a\tb",
            "a\u{e000}",
        ] {
            refused(name);
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for name in [
            "alice",
            "lab-worker",
            "engine-1",
            "svc.feed_2",
            "ops@clinic",
            "José",
            "Ærø",
            "админ-2", // Cyrillic, not only look-alikes of a reserved name
            "administrator",
            "operator",
        ] {
            assert_eq!(check_form("name", name), Ok(()), "{name}");
        }
    }

    #[test]
    fn a_name_confusable_with_another_is_refused_but_not_with_itself() {
        let existing = ["alice", "bob"];
        assert!(check_distinct("name", "аlice", existing).is_err());
        assert!(check_distinct("name", "ALICE", existing).is_err());
        assert!(check_distinct("name", "Βοb", existing).is_err());
        assert_eq!(check_distinct("name", "alice", existing), Ok(()));
        assert_eq!(check_distinct("name", "carol", existing), Ok(()));
    }

    #[test]
    fn usernames_may_be_admin_but_not_the_clusters_actors() {
        assert_eq!(check_username_form("username", "admin"), Ok(()));
        assert!(check_username_form("username", "raftlane:x").is_err());
        assert!(check_username_form("username", " admin").is_err());
    }

    #[test]
    fn the_normal_form_is_nfkc() {
        assert_eq!(normal_form("ａｄｍｉｎ"), "admin");
        assert_eq!(normal_form("ﬁle"), "file");
        assert_eq!(skeleton("РАУРАL"), "paypal");
        assert_eq!(skeleton("ΑDΜΙΝ"), "admin");
    }
}
