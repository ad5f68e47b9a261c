//! Authorization and DESCRIBE statement nodes.

use super::*;

/// A role name: identifier (lowercased), quoted name or string literal (verbatim, marked quoted).
/// The legacy USER statements keep even unquoted names verbatim (marked quoted), as Cassandra does.
pub type RoleName = Ident;

/// `CREATE|ALTER ROLE` options, in source order.
#[derive(Debug, Clone, PartialEq)]
pub enum RoleOption {
    /// `PASSWORD = 'p'`
    Password(String),
    /// `HASHED PASSWORD = 'h'`
    HashedPassword(String),
    /// `GENERATED PASSWORD`
    GeneratedPassword,
    /// `LOGIN = bool`
    Login(bool),
    /// `SUPERUSER = bool`
    Superuser(bool),
    /// `OPTIONS = {...}`
    Options(Vec<(String, Term)>),
    /// `ACCESS TO DATACENTERS {'dc1', ...}`; empty with `all` for `ACCESS TO ALL DATACENTERS`
    AccessToDatacenters {
        /// `ALL DATACENTERS`
        all: bool,
        /// Named datacenters.
        datacenters: Vec<String>,
    },
    /// `ACCESS FROM CIDRS {...}` / `ACCESS FROM ALL CIDRS`
    AccessFromCidrs {
        /// `ALL CIDRS`
        all: bool,
        /// Named CIDR groups.
        cidrs: Vec<String>,
    },
}

/// `CREATE ROLE` / `CREATE USER`
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRoleStatement {
    /// True for the legacy `CREATE USER` form.
    pub is_user: bool,
    /// `IF NOT EXISTS`
    pub if_not_exists: bool,
    /// Role name.
    pub name: RoleName,
    /// Options (USER's `SUPERUSER`/`NOSUPERUSER` map to [`RoleOption::Superuser`]).
    pub options: Vec<RoleOption>,
}

/// `ALTER ROLE` / `ALTER USER`
#[derive(Debug, Clone, PartialEq)]
pub struct AlterRoleStatement {
    /// True for the legacy `ALTER USER` form.
    pub is_user: bool,
    /// `IF EXISTS`
    pub if_exists: bool,
    /// Role name.
    pub name: RoleName,
    /// Options.
    pub options: Vec<RoleOption>,
}

/// A permission in GRANT/REVOKE/LIST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// `CREATE`
    Create,
    /// `ALTER`
    Alter,
    /// `DROP`
    Drop,
    /// `SELECT`
    Select,
    /// `MODIFY`
    Modify,
    /// `AUTHORIZE`
    Authorize,
    /// `DESCRIBE`
    Describe,
    /// `EXECUTE`
    Execute,
    /// `UNMASK`
    Unmask,
    /// `SELECT_MASKED`
    SelectMasked,
}

/// The permissions of a GRANT/REVOKE/LIST.
#[derive(Debug, Clone, PartialEq)]
pub enum Permissions {
    /// `ALL [PERMISSIONS]`
    All,
    /// One named permission.
    One(Permission),
    /// Several permissions: `SELECT, MODIFY` (in source order).
    Several(Vec<Permission>),
}

/// A resource in GRANT/REVOKE/LIST.
#[derive(Debug, Clone, PartialEq)]
pub enum Resource {
    /// `ALL KEYSPACES`
    AllKeyspaces,
    /// `KEYSPACE ks`
    Keyspace(Ident),
    /// `[TABLE] ks.t`
    Table(QualifiedName),
    /// `ALL TABLES IN KEYSPACE ks`
    AllTables(Ident),
    /// `ALL ROLES`
    AllRoles,
    /// `ROLE r`
    Role(RoleName),
    /// `ALL FUNCTIONS [IN KEYSPACE ks]`
    AllFunctions(Option<Ident>),
    /// `FUNCTION ks.f(types)`
    Function {
        /// Function name.
        name: QualifiedName,
        /// Argument types.
        arg_types: Vec<CqlTypeExpr>,
    },
    /// `ALL MBEANS`
    AllMBeans,
    /// `MBEAN 'name'` / `MBEANS 'pattern'`
    MBean(String),
}

/// The statement kinds of the authorization family.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthStatement {
    /// `CREATE ROLE|USER`
    CreateRole(CreateRoleStatement),
    /// `ALTER ROLE|USER`
    AlterRole(AlterRoleStatement),
    /// `DROP ROLE|USER [IF EXISTS] name`
    DropRole {
        /// True for `DROP USER`.
        is_user: bool,
        /// `IF EXISTS`
        if_exists: bool,
        /// Name.
        name: RoleName,
    },
    /// `GRANT role TO grantee`
    GrantRole {
        /// Granted role.
        role: RoleName,
        /// Grantee.
        grantee: RoleName,
    },
    /// `REVOKE role FROM revokee`
    RevokeRole {
        /// Revoked role.
        role: RoleName,
        /// Revokee.
        revokee: RoleName,
    },
    /// `GRANT perms ON resource TO role`
    GrantPermissions {
        /// Permissions.
        permissions: Permissions,
        /// Resource.
        resource: Resource,
        /// Grantee.
        grantee: RoleName,
    },
    /// `REVOKE perms ON resource FROM role`
    RevokePermissions {
        /// Permissions.
        permissions: Permissions,
        /// Resource.
        resource: Resource,
        /// Revokee.
        revokee: RoleName,
    },
    /// `LIST perms [ON resource] [OF role] [NORECURSIVE]`
    ListPermissions {
        /// Permissions.
        permissions: Permissions,
        /// Resource.
        resource: Option<Resource>,
        /// `OF role`
        of: Option<RoleName>,
        /// `NORECURSIVE`
        recursive: bool,
    },
    /// `LIST ROLES [OF role] [NORECURSIVE]`
    ListRoles {
        /// `OF role`
        of: Option<RoleName>,
        /// `NORECURSIVE` absent
        recursive: bool,
    },
    /// `LIST USERS`
    ListUsers,
    /// `LIST SUPERUSERS`
    ListSuperusers,
    /// `ADD IDENTITY [IF NOT EXISTS] 'id' TO ROLE r`
    AddIdentity {
        /// `IF NOT EXISTS`
        if_not_exists: bool,
        /// Identity.
        identity: String,
        /// Role.
        role: RoleName,
    },
    /// `DROP IDENTITY [IF EXISTS] 'id'`
    DropIdentity {
        /// `IF EXISTS`
        if_exists: bool,
        /// Identity.
        identity: String,
    },
}

/// What a DESCRIBE statement asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum DescribeTarget {
    /// `DESCRIBE CLUSTER`
    Cluster,
    /// `DESCRIBE [FULL] SCHEMA`
    Schema {
        /// `FULL` (include system keyspaces)
        full: bool,
    },
    /// `DESCRIBE KEYSPACES`
    Keyspaces,
    /// `DESCRIBE [ONLY] KEYSPACE [ks]` (None: the current keyspace)
    Keyspace {
        /// `ONLY`
        only: bool,
        /// Keyspace.
        name: Option<Ident>,
    },
    /// `DESCRIBE TABLES`
    Tables,
    /// `DESCRIBE TABLE x`
    Table(QualifiedName),
    /// `DESCRIBE TYPES`
    Types,
    /// `DESCRIBE TYPE x`
    Type(QualifiedName),
    /// `DESCRIBE FUNCTIONS`
    Functions,
    /// `DESCRIBE FUNCTION x`
    Function(QualifiedName),
    /// `DESCRIBE AGGREGATES`
    Aggregates,
    /// `DESCRIBE AGGREGATE x`
    Aggregate(QualifiedName),
    /// `DESCRIBE INDEX x`
    Index(QualifiedName),
    /// `DESCRIBE MATERIALIZED VIEW x`
    MaterializedView(QualifiedName),
    /// `DESCRIBE name` (a keyspace, table, view, index, type, function or aggregate)
    Name(QualifiedName),
}

/// `DESCRIBE ...` / `DESC ...`
#[derive(Debug, Clone, PartialEq)]
pub struct DescribeStatement {
    /// The target.
    pub target: DescribeTarget,
    /// `WITH INTERNALS`
    pub with_internals: bool,
}
