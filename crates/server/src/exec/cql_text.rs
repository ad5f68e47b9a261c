//! CQL text for names and literals as Cassandra writes them (DESCRIBE output, index targets,
//! error messages). A leaf: every executor may quote without depending on DESCRIBE.

/// Quotes an identifier the way Cassandra's `ColumnIdentifier.maybeQuote` does.
pub fn maybe_quote(name: &str) -> String {
    let simple = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if simple && !helenus_cql::is_reserved_keyword(name) {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A CQL string literal: single quotes, inner ones doubled.
pub fn quote_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_lowercase_non_keyword_names_stay_unquoted() {
        assert_eq!(maybe_quote("user_id2"), "user_id2");
        assert_eq!(maybe_quote("Value"), "\"Value\"");
        assert_eq!(maybe_quote("2col"), "\"2col\"");
        assert_eq!(maybe_quote("select"), "\"select\"");
        assert_eq!(maybe_quote("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn string_literals_double_their_quotes() {
        assert_eq!(quote_string("it's"), "'it''s'");
    }
}
