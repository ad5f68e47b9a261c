//! Parses CQL type strings as Cassandra prints them in `system_schema` (`frozen<map<text, int>>`,
//! `tuple<int, text>`, `vector<float, 3>`, user type names).

use helenus_types::{CqlType, NativeType, UserType, MAX_TYPE_NESTING};

/// Looks user types up by name while parsing a type string.
pub trait TypeResolver {
    fn user_type(&self, name: &str) -> Option<UserType>;
}

impl TypeResolver for () {
    fn user_type(&self, _name: &str) -> Option<UserType> {
        None
    }
}

/// Parses one type string; user types are looked up through `resolver`.
pub fn parse_type_string(s: &str, resolver: &dyn TypeResolver) -> Result<CqlType, String> {
    let mut p = Parser {
        s: s.as_bytes(),
        pos: 0,
        resolver,
        depth: 0,
    };
    let t = p.parse_type()?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(format!("trailing characters in type '{s}'"));
    }
    Ok(t)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    resolver: &'a dyn TypeResolver,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b'"') {
            let mut out = Vec::new();
            self.pos += 1;
            loop {
                match self.s.get(self.pos) {
                    None => return Err("unterminated quoted name".into()),
                    Some(b'"') if self.s.get(self.pos + 1) == Some(&b'"') => {
                        out.push(b'"');
                        self.pos += 2;
                    }
                    Some(b'"') => {
                        self.pos += 1;
                        break;
                    }
                    Some(&c) => {
                        out.push(c);
                        self.pos += 1;
                    }
                }
            }
            return String::from_utf8(out).map_err(|e| e.to_string());
        }
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || matches!(self.s[self.pos], b'_' | b'.'))
        {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(format!("expected a type name at {}", self.pos));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.skip_ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at {}", c as char, self.pos))
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn args(&mut self) -> Result<Vec<CqlType>, String> {
        self.expect(b'<')?;
        let mut out = vec![self.parse_type()?];
        while self.peek() == Some(b',') {
            self.pos += 1;
            out.push(self.parse_type()?);
        }
        self.expect(b'>')?;
        Ok(out)
    }

    fn parse_type(&mut self) -> Result<CqlType, String> {
        self.depth += 1;
        if self.depth > MAX_TYPE_NESTING {
            return Err(format!(
                "type nested too deeply (more than {MAX_TYPE_NESTING} levels)"
            ));
        }
        let r = self.parse_type_inner();
        self.depth -= 1;
        r
    }

    fn parse_type_inner(&mut self) -> Result<CqlType, String> {
        if self.peek() == Some(b'\'') {
            self.pos += 1;
            let start = self.pos;
            while self.pos < self.s.len() && self.s[self.pos] != b'\'' {
                self.pos += 1;
            }
            let class = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
            self.expect(b'\'')?;
            return Ok(CqlType::Custom(class));
        }
        let name = self.ident()?;
        let lower = name.to_ascii_lowercase();
        if lower == "empty" {
            return Ok(CqlType::empty());
        }
        if let Some(n) = NativeType::from_cql_name(&lower) {
            return Ok(CqlType::Native(n));
        }
        let one = |mut v: Vec<CqlType>, what: &str| -> Result<CqlType, String> {
            if v.len() != 1 {
                return Err(format!("{what} takes one type argument"));
            }
            v.pop()
                .ok_or_else(|| format!("{what} takes one type argument"))
        };
        match lower.as_str() {
            "frozen" => {
                let inner = one(self.args()?, "frozen")?;
                Ok(inner.frozen())
            }
            "list" => Ok(CqlType::List {
                element: Box::new(one(self.args()?, "list")?),
                frozen: false,
            }),
            "set" => Ok(CqlType::Set {
                element: Box::new(one(self.args()?, "set")?),
                frozen: false,
            }),
            "map" => {
                let mut a = self.args()?;
                if a.len() != 2 {
                    return Err("map takes two type arguments".into());
                }
                let value = a.pop().ok_or("map value")?;
                let key = a.pop().ok_or("map key")?;
                Ok(CqlType::Map {
                    key: Box::new(key),
                    value: Box::new(value),
                    frozen: false,
                })
            }
            "tuple" => Ok(CqlType::Tuple(self.args()?)),
            "vector" => {
                self.expect(b'<')?;
                let element = self.parse_type()?;
                self.expect(b',')?;
                self.skip_ws();
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let dimension: u32 = std::str::from_utf8(&self.s[start..self.pos])
                    .map_err(|e| e.to_string())?
                    .parse()
                    .map_err(|_| "vector dimension must be a positive integer".to_string())?;
                self.expect(b'>')?;
                Ok(CqlType::Vector {
                    element: Box::new(element),
                    dimension,
                })
            }
            _ => match self.resolver.user_type(&name) {
                Some(def) => Ok(CqlType::Udt {
                    def: Box::new(def),
                    frozen: false,
                }),
                None => Err(format!("Unknown type {name}")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_system_schema_spellings() {
        for s in [
            "int",
            "frozen<map<text, text>>",
            "set<text>",
            "list<int>",
            "frozen<tuple<int, text>>",
            "vector<float, 3>",
            "map<text, frozen<list<int>>>",
        ] {
            let t = parse_type_string(s, &()).unwrap();
            assert_eq!(t.to_string(), s);
        }
    }

    /// Issue 11: the loader's limit was lower than what CREATE TABLE accepted, so the node
    /// refused to start. Every type within `MAX_TYPE_NESTING` must load back.
    #[test]
    fn the_loader_reads_back_every_type_within_the_shared_limit() {
        let mut t = CqlType::Native(NativeType::Int);
        let mut tuple = CqlType::Native(NativeType::Int);
        for _ in 0..40 {
            let spelled = t.to_string();
            let loads = parse_type_string(&spelled, &()).is_ok();
            assert_eq!(loads, t.nesting_depth() <= MAX_TYPE_NESTING, "{spelled}");
            let spelled = tuple.to_string();
            let loads = parse_type_string(&spelled, &()).is_ok();
            assert_eq!(
                loads,
                tuple.nesting_depth() <= MAX_TYPE_NESTING,
                "{spelled}"
            );
            t = CqlType::List {
                element: Box::new(t),
                frozen: true,
            };
            tuple = CqlType::Tuple(vec![tuple]);
        }
    }

    #[test]
    fn unknown_type_is_an_error_not_a_panic() {
        assert!(parse_type_string("foo", &()).is_err());
        assert!(parse_type_string("map<int>", &()).is_err());
        assert!(parse_type_string("list<", &()).is_err());
        let deep = "list<".repeat(100) + "int" + &">".repeat(100);
        assert!(parse_type_string(&deep, &()).is_err());
    }
}
