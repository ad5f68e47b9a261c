//! The CQL abstract syntax tree produced by [`crate::parse`].
//!
//! The tree is syntactic: names are not resolved against a schema and types are not checked.
//! Conventions used throughout:
//! - every identifier is an [`Ident`] holding its normalised name (unquoted names lowercased,
//!   quoted names verbatim) and whether it was quoted;
//! - literals keep their source text where Cassandra keeps it (integers, floats, decimals,
//!   durations, blobs, uuids), so the executor decides the target type from the schema;
//! - bind markers are numbered 0-based in source order ([`BindMarker::index`]).

pub use helenus_types::NativeType;

/// An identifier (column, table, keyspace, field, index, role... name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident {
    /// Unquoted names are lowercased; `"quoted"` names are kept verbatim (with `""` unescaped).
    pub name: String,
    /// Whether the source spelled it with double quotes.
    pub quoted: bool,
}

impl Ident {
    /// An identifier as if written unquoted (the name is lowercased).
    pub fn unquoted(name: &str) -> Ident {
        Ident {
            name: name.to_ascii_lowercase(),
            quoted: false,
        }
    }

    /// An identifier as if written in double quotes (the name is kept verbatim).
    pub fn quoted(name: &str) -> Ident {
        Ident {
            name: name.to_string(),
            quoted: true,
        }
    }
}

/// A possibly keyspace-qualified name: `ks.tbl`, `tbl`, `ks.fn`, `ks.type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QualifiedName {
    /// The keyspace, when written.
    pub keyspace: Option<Ident>,
    /// The object name.
    pub name: Ident,
}

/// A CQL type as written in DDL, casts and type hints.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CqlTypeExpr {
    /// A native type, including `counter` and `duration`; `varchar` parses as [`NativeType::Varchar`].
    Native(NativeType),
    /// `list<T>`
    List(Box<CqlTypeExpr>),
    /// `set<T>`
    Set(Box<CqlTypeExpr>),
    /// `map<K, V>`
    Map(Box<CqlTypeExpr>, Box<CqlTypeExpr>),
    /// `tuple<A, B, ...>`
    Tuple(Vec<CqlTypeExpr>),
    /// `vector<T, n>`
    Vector(Box<CqlTypeExpr>, u32),
    /// `frozen<T>`
    Frozen(Box<CqlTypeExpr>),
    /// A user-defined type name, possibly keyspace-qualified.
    UserDefined(QualifiedName),
    /// A custom type given by its Java class name string: `'org.apache...Type'`.
    Custom(String),
}

/// A bind marker: `?` (anonymous) or `:name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BindMarker {
    /// 0-based position among all bind markers of the statement, in source order.
    pub index: usize,
    /// The name for `:name` markers (normalised like an identifier).
    pub name: Option<String>,
}

/// Arithmetic operators in terms and selectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

/// A value expression (VALUES, SET, WHERE right-hand sides, LIMIT, USING, options...).
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer literal's text, possibly with a leading `-` (any size; the schema decides).
    Integer(String),
    /// A float literal's text (`1.5`, `-2e10`, `NaN`, `Infinity`, `-Infinity`).
    Float(String),
    /// A string literal, unescaped (`''` -> `'`, `$$..$$` bodies verbatim).
    String(String),
    /// A UUID literal's text.
    Uuid(String),
    /// A blob literal's hex digits, without the `0x` prefix.
    Blob(String),
    /// A duration literal's text (`1h30m`, `P1Y2M`, `-P1W`, `P0001-02-03T04:05:06`).
    Duration(String),
    /// `?` or `:name`.
    Bind(BindMarker),
    /// `[a, b]`
    List(Vec<Term>),
    /// `{a, b}` (at least one element)
    Set(Vec<Term>),
    /// `{k: v, ...}` (at least one entry) with term keys.
    Map(Vec<(Term, Term)>),
    /// `{}`: an empty set, map or UDT; the receiver's type decides.
    EmptyBrace,
    /// `(a, b, ...)`; as in Cassandra, `(a)` is a one-element tuple (type hints like `(int) ?`
    /// are [`Term::TypeHint`]).
    Tuple(Vec<Term>),
    /// `{field: v, ...}` with identifier keys.
    Udt(Vec<(Ident, Term)>),
    /// `f(x, ...)` or `ks.f(x, ...)`.
    FunctionCall {
        /// Function name.
        name: QualifiedName,
        /// Arguments.
        args: Vec<Term>,
    },
    /// A type hint: `(int) ?`, `(text) 'a'`.
    TypeHint {
        /// The hinted type.
        ty: CqlTypeExpr,
        /// The hinted term.
        term: Box<Term>,
    },
    /// `a + b` etc.
    Binary {
        /// Operator.
        op: ArithOp,
        /// Left operand.
        left: Box<Term>,
        /// Right operand.
        right: Box<Term>,
    },
    /// Unary minus on a non-literal (`-f(x)`, `-?`); on numeric literals the sign is folded in.
    Negate(Box<Term>),
}

/// One item of a SELECT clause or a GROUP BY element.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// A column.
    Column(Ident),
    /// A literal or bind marker.
    Term(Term),
    /// `f(args)` / `ks.f(args)` (includes `count(1)`, `token(a, b)`, aggregates).
    FunctionCall {
        /// Function name.
        name: QualifiedName,
        /// Arguments.
        args: Vec<Selector>,
    },
    /// `count(*)`
    CountStar,
    /// `CAST(x AS type)`
    Cast {
        /// The cast selector.
        selector: Box<Selector>,
        /// The target native type.
        ty: CqlTypeExpr,
        /// The target type's keyword as written, lowercased: `varchar` and `text` are the same
        /// type but only `text` names a cast function.
        written: String,
    },
    /// `writetime(c)` (possibly `writetime(c[k])`).
    WriteTime(Box<Selector>),
    /// `maxwritetime(c)`
    MaxWriteTime(Box<Selector>),
    /// `ttl(c)`
    Ttl(Box<Selector>),
    /// `a.b` (UDT field).
    Field {
        /// The UDT-valued selector.
        selector: Box<Selector>,
        /// The field.
        field: Ident,
    },
    /// `c[k]`
    Element {
        /// The collection-valued selector.
        selector: Box<Selector>,
        /// The key or index.
        key: Term,
    },
    /// `c[a..b]`, `c[a..]`, `c[..b]`
    Slice {
        /// The collection-valued selector.
        selector: Box<Selector>,
        /// Inclusive lower bound, when given.
        from: Option<Term>,
        /// Inclusive upper bound, when given.
        to: Option<Term>,
    },
    /// `(type) selector`
    TypeHint {
        /// The hinted type.
        ty: CqlTypeExpr,
        /// The hinted selector.
        selector: Box<Selector>,
    },
    /// `a + b` etc.
    Binary {
        /// Operator.
        op: ArithOp,
        /// Left operand.
        left: Box<Selector>,
        /// Right operand.
        right: Box<Selector>,
    },
    /// `-x`
    Negate(Box<Selector>),
    /// `[a, b]`
    List(Vec<Selector>),
    /// `{a, b}` (possibly empty: `{}`)
    Set(Vec<Selector>),
    /// `{k: v}` (keys may be identifiers for UDT literals; the executor decides)
    Map(Vec<(Selector, Selector)>),
    /// `(a, b)`
    Tuple(Vec<Selector>),
}

/// A selector with its optional `AS alias`.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectItem {
    /// The selector.
    pub selector: Selector,
    /// The alias after `AS`.
    pub alias: Option<Ident>,
}

/// What a SELECT returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// `*`
    Star,
    /// An explicit selector list.
    Items(Vec<SelectItem>),
}

/// Comparison operators in WHERE and IF clauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `=`
    Eq,
    /// `<`
    Lt,
    /// `<=`
    Lte,
    /// `>`
    Gt,
    /// `>=`
    Gte,
    /// `!=`
    Neq,
    /// `IN`
    In,
    /// `NOT IN`
    NotIn,
    /// `CONTAINS`
    Contains,
    /// `CONTAINS KEY`
    ContainsKey,
    /// `NOT CONTAINS`
    NotContains,
    /// `NOT CONTAINS KEY`
    NotContainsKey,
    /// `LIKE`
    Like,
    /// `IS NOT NULL` (the value is [`RelationValue::Single`] of [`Term::Null`])
    IsNotNull,
    /// `BETWEEN a AND b` (the value is [`RelationValue::Between`])
    Between,
}

/// The right-hand side of a relation or condition.
#[derive(Debug, Clone, PartialEq)]
pub enum RelationValue {
    /// One term (also `IN ?` / `IN :name`, where the term is a bind marker).
    Single(Term),
    /// `IN (a, b, ...)`; for multi-column relations each element is a [`Term::Tuple`] or marker.
    List(Vec<Term>),
    /// `BETWEEN a AND b`
    Between(Term, Term),
}

/// One WHERE restriction.
#[derive(Debug, Clone, PartialEq)]
pub enum Relation {
    /// `col op value` (also `col IS NOT NULL`, `col IN (...)`, `col CONTAINS v`).
    Column {
        /// The column.
        column: Ident,
        /// The operator.
        op: Operator,
        /// The value.
        value: RelationValue,
    },
    /// `col[key] op value`
    Element {
        /// The collection column.
        column: Ident,
        /// The map key / element.
        key: Term,
        /// The operator.
        op: Operator,
        /// The value.
        value: Term,
    },
    /// `token(a, b) op value`
    Token {
        /// The partition key columns.
        columns: Vec<Ident>,
        /// The operator.
        op: Operator,
        /// The value.
        value: RelationValue,
    },
    /// `(a, b) op (1, 2)`, `(a, b) IN ((1, 2), (3, 4))`, `(a, b) IN ?`
    MultiColumn {
        /// The clustering columns.
        columns: Vec<Ident>,
        /// The operator.
        op: Operator,
        /// The value.
        value: RelationValue,
    },
    /// `expr(index_name, 'query')`: a custom index expression.
    CustomIndexExpression {
        /// The index.
        index: QualifiedName,
        /// The expression handed to the index.
        value: Term,
    },
}

/// One `SET` assignment of UPDATE.
#[derive(Debug, Clone, PartialEq)]
pub enum Assignment {
    /// `c = t`
    Set {
        /// Column.
        column: Ident,
        /// Value.
        value: Term,
    },
    /// `c = c + t` or `c += t` (append, add to set/map, counter increment).
    Add {
        /// Column.
        column: Ident,
        /// Value.
        value: Term,
    },
    /// `c = t + c` (list prepend).
    Prepend {
        /// Column.
        column: Ident,
        /// Value.
        value: Term,
    },
    /// `c = c - t` or `c -= t` (remove, counter decrement).
    Subtract {
        /// Column.
        column: Ident,
        /// Value.
        value: Term,
    },
    /// `c[k] = t`
    SetElement {
        /// Column.
        column: Ident,
        /// Key or index.
        key: Term,
        /// Value.
        value: Term,
    },
    /// `c.field = t`
    SetField {
        /// Column.
        column: Ident,
        /// UDT field.
        field: Ident,
        /// Value.
        value: Term,
    },
}

/// What a column condition or DELETE item addresses inside a column.
#[derive(Debug, Clone, PartialEq)]
pub enum SubPath {
    /// `c[k]`
    Element(Term),
    /// `c.field`
    Field(Ident),
}

/// One `IF` column condition.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnCondition {
    /// The column.
    pub column: Ident,
    /// An element or field of the column, when written.
    pub path: Option<SubPath>,
    /// The operator.
    pub op: Operator,
    /// The value.
    pub value: RelationValue,
}

/// An `IF` clause of a write.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteCondition {
    /// `IF EXISTS`
    Exists,
    /// `IF NOT EXISTS`
    NotExists,
    /// `IF c op t AND ...`
    Columns(Vec<ColumnCondition>),
}

/// `USING TTL t AND TIMESTAMP t`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UsingClause {
    /// `TTL t`
    pub ttl: Option<Term>,
    /// `TIMESTAMP t`
    pub timestamp: Option<Term>,
}

/// Sort direction in ORDER BY and CLUSTERING ORDER BY.
#[derive(Debug, Clone, PartialEq)]
pub enum OrderDirection {
    /// `ASC` (also the default when omitted)
    Asc,
    /// `DESC`
    Desc,
    /// `ANN OF <vector>` (vector search)
    Ann(Term),
}

/// One ORDER BY element.
#[derive(Debug, Clone, PartialEq)]
pub struct Ordering {
    /// The column.
    pub column: Ident,
    /// The direction.
    pub direction: OrderDirection,
}

mod auth;
mod ddl;
mod dml;

pub use auth::*;
pub use ddl::*;
pub use dml::*;

/// A parsed CQL statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `SELECT`
    Select(Box<SelectStatement>),
    /// `INSERT`
    Insert(Box<InsertStatement>),
    /// `UPDATE`
    Update(Box<UpdateStatement>),
    /// `DELETE`
    Delete(Box<DeleteStatement>),
    /// `BEGIN ... APPLY BATCH`
    Batch(Box<BatchStatement>),
    /// `USE ks`
    Use(Ident),
    /// `CREATE KEYSPACE`
    CreateKeyspace(CreateKeyspaceStatement),
    /// `ALTER KEYSPACE`
    AlterKeyspace(AlterKeyspaceStatement),
    /// `DROP KEYSPACE [IF EXISTS] ks`
    DropKeyspace {
        /// `IF EXISTS`
        if_exists: bool,
        /// Keyspace.
        name: Ident,
    },
    /// `CREATE TABLE`
    CreateTable(Box<CreateTableStatement>),
    /// `ALTER TABLE`
    AlterTable(Box<AlterTableStatement>),
    /// `DROP TABLE [IF EXISTS] t`
    DropTable {
        /// `IF EXISTS`
        if_exists: bool,
        /// Table.
        name: QualifiedName,
    },
    /// `TRUNCATE [TABLE] t`
    Truncate(QualifiedName),
    /// `CREATE TYPE`
    CreateType(CreateTypeStatement),
    /// `ALTER TYPE`
    AlterType(AlterTypeStatement),
    /// `DROP TYPE [IF EXISTS] t`
    DropType {
        /// `IF EXISTS`
        if_exists: bool,
        /// Type.
        name: QualifiedName,
    },
    /// `CREATE INDEX`
    CreateIndex(Box<CreateIndexStatement>),
    /// `DROP INDEX [IF EXISTS] [ks.]idx`
    DropIndex {
        /// `IF EXISTS`
        if_exists: bool,
        /// Index.
        name: QualifiedName,
    },
    /// `CREATE MATERIALIZED VIEW`
    CreateMaterializedView(Box<CreateViewStatement>),
    /// `ALTER MATERIALIZED VIEW v WITH ...`
    AlterMaterializedView {
        /// `IF EXISTS`
        if_exists: bool,
        /// View.
        name: QualifiedName,
        /// Options.
        options: TableOptions,
    },
    /// `DROP MATERIALIZED VIEW [IF EXISTS] v`
    DropMaterializedView {
        /// `IF EXISTS`
        if_exists: bool,
        /// View.
        name: QualifiedName,
    },
    /// `CREATE FUNCTION`
    CreateFunction(Box<CreateFunctionStatement>),
    /// `DROP FUNCTION`
    DropFunction(DropFunctionStatement),
    /// `CREATE AGGREGATE`
    CreateAggregate(Box<CreateAggregateStatement>),
    /// `DROP AGGREGATE`
    DropAggregate(DropFunctionStatement),
    /// `CREATE TRIGGER [IF NOT EXISTS] name ON t USING 'class'`
    CreateTrigger {
        /// `IF NOT EXISTS`
        if_not_exists: bool,
        /// Trigger name.
        name: Ident,
        /// Table.
        table: QualifiedName,
        /// Trigger class.
        class: String,
    },
    /// `DROP TRIGGER [IF EXISTS] name ON t`
    DropTrigger {
        /// `IF EXISTS`
        if_exists: bool,
        /// Trigger name.
        name: Ident,
        /// Table.
        table: QualifiedName,
    },
    /// Roles, users, permissions, identities.
    Auth(Box<AuthStatement>),
    /// `DESCRIBE` / `DESC`
    Describe(DescribeStatement),
}

/// The result of parsing one statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The statement.
    pub statement: Statement,
    /// How many bind markers the statement has.
    pub bind_count: usize,
    /// The name of each bind marker (None for `?`), indexed by [`BindMarker::index`].
    pub bind_names: Vec<Option<String>>,
}
