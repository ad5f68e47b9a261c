//! The resources permissions are granted on, named as Cassandra names them: `data/ks/t` in
//! `system_auth.role_permissions`, `<table ks.t>` in LIST PERMISSIONS and in errors.

/// Cassandra's permissions, in its enum order (the order LIST PERMISSIONS sorts by).
pub const PERMISSIONS: &[&str] = &[
    "CREATE",
    "ALTER",
    "DROP",
    "SELECT",
    "MODIFY",
    "AUTHORIZE",
    "DESCRIBE",
    "EXECUTE",
    "UNMASK",
    "SELECT_MASKED",
];

/// A permission's place in [`PERMISSIONS`] (unknown names sort last).
pub fn permission_rank(p: &str) -> usize {
    PERMISSIONS
        .iter()
        .position(|x| *x == p)
        .unwrap_or(PERMISSIONS.len())
}

/// Something permissions are granted on; each level is the parent of the next.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// `ALL KEYSPACES`, `KEYSPACE ks`, `TABLE ks.t`
    Data {
        keyspace: Option<String>,
        table: Option<String>,
    },
    /// `ALL ROLES`, `ROLE r`
    Roles { role: Option<String> },
    /// `ALL FUNCTIONS`, `ALL FUNCTIONS IN KEYSPACE ks`, `FUNCTION ks.f(args)` (args as
    /// Cassandra writes them in the name: `f[int^text]`)
    Functions {
        keyspace: Option<String>,
        function: Option<String>,
    },
}

impl Resource {
    pub fn all_keyspaces() -> Resource {
        Resource::Data {
            keyspace: None,
            table: None,
        }
    }

    pub fn keyspace(ks: &str) -> Resource {
        Resource::Data {
            keyspace: Some(ks.to_string()),
            table: None,
        }
    }

    pub fn table(ks: &str, t: &str) -> Resource {
        Resource::Data {
            keyspace: Some(ks.to_string()),
            table: Some(t.to_string()),
        }
    }

    pub fn all_roles() -> Resource {
        Resource::Roles { role: None }
    }

    pub fn role(r: &str) -> Resource {
        Resource::Roles {
            role: Some(r.to_string()),
        }
    }

    pub fn keyspace_functions(ks: &str) -> Resource {
        Resource::Functions {
            keyspace: Some(ks.to_string()),
            function: None,
        }
    }

    /// The name stored in `system_auth.role_permissions.resource`.
    pub fn name(&self) -> String {
        let (root, a, b) = match self {
            Resource::Data { keyspace, table } => ("data", keyspace, table),
            Resource::Roles { role } => ("roles", role, &None),
            Resource::Functions { keyspace, function } => ("functions", keyspace, function),
        };
        match (a, b) {
            (None, _) => root.to_string(),
            (Some(a), None) => format!("{root}/{a}"),
            (Some(a), Some(b)) => format!("{root}/{a}/{b}"),
        }
    }

    /// The inverse of [`Resource::name`]; `None` for a name Helenus does not model (MBeans).
    pub fn from_name(name: &str) -> Option<Resource> {
        let mut parts = name.splitn(3, '/');
        let root = parts.next()?;
        let a = parts.next().map(str::to_string);
        let b = parts.next().map(str::to_string);
        match root {
            "data" => Some(Resource::Data {
                keyspace: a,
                table: b,
            }),
            "roles" if b.is_none() => Some(Resource::Roles { role: a }),
            "functions" => Some(Resource::Functions {
                keyspace: a,
                function: b,
            }),
            _ => None,
        }
    }

    /// The resource one level up, if any.
    pub fn parent(&self) -> Option<Resource> {
        match self {
            Resource::Data {
                keyspace: Some(ks),
                table: Some(_),
            } => Some(Resource::keyspace(ks)),
            Resource::Data {
                keyspace: Some(_),
                table: None,
            } => Some(Resource::all_keyspaces()),
            Resource::Roles { role: Some(_) } => Some(Resource::all_roles()),
            Resource::Functions {
                keyspace: Some(ks),
                function: Some(_),
            } => Some(Resource::keyspace_functions(ks)),
            Resource::Functions {
                keyspace: Some(_),
                function: None,
            } => Some(Resource::Functions {
                keyspace: None,
                function: None,
            }),
            _ => None,
        }
    }

    /// This resource and its parents, nearest first.
    pub fn chain(&self) -> Vec<Resource> {
        let mut out = vec![self.clone()];
        while let Some(p) = out.last().and_then(Resource::parent) {
            out.push(p);
        }
        out
    }

    /// Whether `self` is `other` or lies under it (a table under its keyspace).
    pub fn is_within(&self, other: &Resource) -> bool {
        self.chain().contains(other)
    }

    /// The permissions that mean something on this resource (what `ALL` grants), in
    /// Cassandra's order.
    pub fn applicable(&self) -> &'static [&'static str] {
        match self {
            Resource::Data { table: None, .. } => &[
                "CREATE",
                "ALTER",
                "DROP",
                "SELECT",
                "MODIFY",
                "AUTHORIZE",
                "UNMASK",
                "SELECT_MASKED",
            ],
            Resource::Data { table: Some(_), .. } => &[
                "ALTER",
                "DROP",
                "SELECT",
                "MODIFY",
                "AUTHORIZE",
                "UNMASK",
                "SELECT_MASKED",
            ],
            Resource::Roles { role: None } => &["CREATE", "ALTER", "DROP", "AUTHORIZE", "DESCRIBE"],
            Resource::Roles { role: Some(_) } => &["ALTER", "DROP", "AUTHORIZE", "DESCRIBE"],
            Resource::Functions { function: None, .. } => {
                &["CREATE", "ALTER", "DROP", "AUTHORIZE", "EXECUTE"]
            }
            Resource::Functions {
                function: Some(_), ..
            } => &["ALTER", "DROP", "AUTHORIZE", "EXECUTE"],
        }
    }
}

impl std::fmt::Display for Resource {
    /// As LIST PERMISSIONS and Unauthorized messages show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Data { keyspace: None, .. } => write!(f, "<all keyspaces>"),
            Resource::Data {
                keyspace: Some(ks),
                table: None,
            } => write!(f, "<keyspace {ks}>"),
            Resource::Data {
                keyspace: Some(ks),
                table: Some(t),
            } => write!(f, "<table {ks}.{t}>"),
            Resource::Roles { role: None } => write!(f, "<all roles>"),
            Resource::Roles { role: Some(r) } => write!(f, "<role {r}>"),
            Resource::Functions { keyspace: None, .. } => write!(f, "<all functions>"),
            Resource::Functions {
                keyspace: Some(ks),
                function: None,
            } => write!(f, "<all functions in {ks}>"),
            Resource::Functions {
                keyspace: Some(ks),
                function: Some(fun),
            } => write!(f, "<function {ks}.{fun}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn names_and_displays_are_cassandras() {
        let t = Resource::table("ks", "t");
        assert_eq!(t.name(), "data/ks/t");
        assert_eq!(t.to_string(), "<table ks.t>");
        assert_eq!(Resource::keyspace("ks").to_string(), "<keyspace ks>");
        assert_eq!(Resource::all_keyspaces().name(), "data");
        assert_eq!(Resource::role("r").name(), "roles/r");
        assert_eq!(
            Resource::keyspace_functions("ks").to_string(),
            "<all functions in ks>"
        );
        for r in [
            t.clone(),
            Resource::all_roles(),
            Resource::keyspace_functions("k"),
        ] {
            assert_eq!(Resource::from_name(&r.name()), Some(r));
        }
        assert_eq!(Resource::from_name("mbean/x"), None);
    }

    #[test]
    fn a_table_lies_within_its_keyspace_and_all_keyspaces() {
        let t = Resource::table("ks", "t");
        assert_eq!(
            t.chain(),
            vec![
                t.clone(),
                Resource::keyspace("ks"),
                Resource::all_keyspaces()
            ]
        );
        assert!(t.is_within(&Resource::keyspace("ks")));
        assert!(!t.is_within(&Resource::keyspace("other")));
        assert!(!Resource::keyspace("ks").is_within(&t));
    }
}
