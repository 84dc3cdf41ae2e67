//! How `raftlane ctl` prints: aligned tables for people, the API's JSON for scripts (`--json`),
//! and the few value formats the tables share (times, ages, absent values).

use serde_json::Value;
use std::fmt::Write as _;

/// A table printed with its columns aligned: each column as wide as its widest cell, two
/// spaces apart, no trailing spaces. Plain text, so that `grep` and `awk` read it as well as
/// people do.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<I, S>(header: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row; missing cells print empty, extra cells are kept (and widen the table).
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, one line per row after the header, each line ending in `\n`.
    pub fn render(&self) -> String {
        let columns = std::iter::once(&self.header)
            .chain(&self.rows)
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for line in std::iter::once(&self.header).chain(&self.rows) {
            for (i, cell) in line.iter().enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for line in std::iter::once(&self.header).chain(&self.rows) {
            let mut text = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = line.get(i).map(String::as_str).unwrap_or("");
                if i > 0 {
                    text.push_str("  ");
                }
                let _ = write!(text, "{cell:<width$}");
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }

    pub fn print(&self) {
        use std::io::Write as _;
        let _ = std::io::stdout().write_all(self.render().as_bytes());
    }
}

/// Print `value` as indented JSON (what `--json` prints).
pub fn print_json(value: &Value) {
    outln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

/// A cell for a JSON value: strings without quotes, `null` and absent values as `-`, other
/// values as compact JSON.
pub fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// A cell for member `key` of `object`.
pub fn field(object: &Value, key: &str) -> String {
    cell(object.get(key))
}

/// A cell for an optional text, `-` when absent.
pub fn opt<T: ToString>(value: Option<T>) -> String {
    value
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-".to_string())
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SSZ` (UTC); `-` for 0, which the API
/// uses for "never".
pub fn time_ms(ms: u64) -> String {
    if ms == 0 {
        return "-".to_string();
    }
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// A cell for a time member (ms since the epoch) of `object`.
pub fn time_field(object: &Value, key: &str) -> String {
    match object.get(key).and_then(Value::as_u64) {
        Some(ms) => time_ms(ms),
        None => cell(object.get(key)),
    }
}

/// A duration in ms as its largest whole unit (`850ms`, `42s`, `5m`, `3h`, `2d`).
pub fn age_ms(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{}s", ms / 1000),
        60_000..=3_599_999 => format!("{}m", ms / 60_000),
        3_600_000..=86_399_999 => format!("{}h", ms / 3_600_000),
        _ => format!("{}d", ms / 86_400_000),
    }
}

/// The civil date of a day count since 1970-01-01 (proleptic Gregorian; Howard Hinnant's
/// well-known days-to-civil arithmetic, written out for unsigned days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_align_to_their_widest_cell_without_trailing_spaces() {
        let mut t = Table::new(["ID", "ADDRESS", "ROLE"]);
        t.row(["1", "127.0.0.1:7001", "leader"]);
        t.row(["12", "n2:7001", ""]);
        assert_eq!(
            t.render(),
            "ID  ADDRESS         ROLE\n\
             1   127.0.0.1:7001  leader\n\
             12  n2:7001\n"
        );
    }

    #[test]
    fn a_short_row_prints_empty_cells_and_a_long_row_widens_the_table() {
        let mut t = Table::new(["A", "B"]);
        t.row(["x"]);
        t.row(["y", "z", "extra"]);
        assert_eq!(t.render(), "A  B\nx\ny  z  extra\n");
        assert!(!t.is_empty());
        assert!(Table::new(["A"]).is_empty());
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        let mut t = Table::new(["NAME", "N"]);
        t.row(["émile", "1"]);
        assert_eq!(t.render(), "NAME   N\némile  1\n");
    }

    #[test]
    fn json_cells_drop_quotes_and_show_absence_as_a_dash() {
        let v = json!({"s": "text", "n": 3, "z": null, "a": [1, 2]});
        assert_eq!(field(&v, "s"), "text");
        assert_eq!(field(&v, "n"), "3");
        assert_eq!(field(&v, "z"), "-");
        assert_eq!(field(&v, "missing"), "-");
        assert_eq!(field(&v, "a"), "[1,2]");
    }

    /// The cases of `fixtures/time-format.txt`: (ms, the text printed for it).
    fn time_cases() -> Vec<(u64, &'static str)> {
        include_str!("fixtures/time-format.txt")
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (ms, text) = l.split_once(' ').expect("a case is `MS TEXT`");
                (ms.parse().expect("MS is a u64"), text)
            })
            .collect()
    }

    #[test]
    fn times_print_as_utc_dates() {
        let cases = time_cases();
        assert!(cases.len() >= 4, "{cases:?}");
        for (ms, text) in cases {
            assert_eq!(time_ms(ms), text, "time_ms({ms})");
            let v = json!({"at": ms});
            assert_eq!(time_field(&v, "at"), text, "time_field of {ms}");
        }
        assert_eq!(time_field(&json!({"never": null}), "never"), "-");
    }

    #[test]
    fn ages_use_their_largest_whole_unit() {
        assert_eq!(age_ms(850), "850ms");
        assert_eq!(age_ms(42_000), "42s");
        assert_eq!(age_ms(5 * 60_000 + 59_000), "5m");
        assert_eq!(age_ms(3 * 3_600_000), "3h");
        assert_eq!(age_ms(2 * 86_400_000 + 5), "2d");
    }
}
