//! What each bind marker binds to, syntactically: the input to prepared-statement metadata.
//!
//! The executor turns a [`BindReceiver`] into a column spec with the schema (Cassandra names
//! them `c`, `in(c)`, `key(c)`, `value(c)`, `[limit]`, `[ttl]`, `[timestamp]`,
//! `partition key token`, ...). This module only knows positions, not types.

use crate::ast::*;

/// Where a bind marker sits, as far as the syntax tells.
#[derive(Debug, Clone, PartialEq)]
pub enum BindReceiver {
    /// A whole value of a column: INSERT values, `SET c = ?`, `c = c + ?`, `WHERE c op ?`,
    /// `IF c op ?`.
    Column(Ident),
    /// The list of `c IN ?` (Cassandra names it `in(c)`).
    InValues(Ident),
    /// A key or index of collection column `c`: `c[?]`, `CONTAINS KEY ?`, map literal keys.
    CollectionKey(Ident),
    /// A value or element of collection column `c`: `c[k] = ?`, `CONTAINS ?`, list/set
    /// literal elements, map literal values.
    CollectionValue(Ident),
    /// A UDT field of column `c`: `c.f = ?` or `{f: ?}`.
    Field {
        /// The column.
        column: Ident,
        /// The field.
        field: Ident,
    },
    /// Element `position` of a tuple literal for column `c`.
    TupleElement {
        /// The column.
        column: Ident,
        /// 0-based element position.
        position: usize,
    },
    /// `(a, b) op ?`: a tuple of these columns.
    ColumnTuple(Vec<Ident>),
    /// `(a, b) IN ?`: a list of tuples of these columns.
    ColumnTupleInValues(Vec<Ident>),
    /// `token(a, b) op ?`
    Token(Vec<Ident>),
    /// Argument `position` of a function call.
    FunctionArgument {
        /// The function.
        function: QualifiedName,
        /// 0-based argument position.
        position: usize,
    },
    /// `(type) ?`
    TypeHint(CqlTypeExpr),
    /// `LIMIT ?`
    Limit,
    /// `PER PARTITION LIMIT ?`
    PerPartitionLimit,
    /// `USING TTL ?`
    Ttl,
    /// `USING TIMESTAMP ?`
    Timestamp,
    /// `INSERT ... JSON ?`
    JsonDocument,
    /// A marker in a position with no receiver (e.g. a bare selector `SELECT ? FROM t`,
    /// arithmetic operands).
    Unknown,
}

/// One receiver per bind marker of `parsed`, indexed by [`BindMarker::index`].
pub fn bind_receivers(parsed: &Parsed) -> Vec<BindReceiver> {
    let mut c = Collector {
        out: vec![BindReceiver::Unknown; parsed.bind_count],
    };
    c.statement(&parsed.statement);
    c.out
}

struct Collector {
    out: Vec<BindReceiver>,
}

impl Collector {
    fn set(&mut self, b: &BindMarker, r: BindReceiver) {
        if let Some(slot) = self.out.get_mut(b.index) {
            *slot = r;
        }
    }

    fn statement(&mut self, s: &Statement) {
        match s {
            Statement::Select(s) => self.select(s),
            Statement::Insert(i) => self.insert(i),
            Statement::Update(u) => self.update(u),
            Statement::Delete(d) => self.delete(d),
            Statement::Batch(b) => {
                self.using(&b.using);
                for child in &b.statements {
                    match child {
                        BatchChild::Insert(i) => self.insert(i),
                        BatchChild::Update(u) => self.update(u),
                        BatchChild::Delete(d) => self.delete(d),
                    }
                }
            }
            _ => {}
        }
    }

    fn select(&mut self, s: &SelectStatement) {
        if let Projection::Items(items) = &s.projection {
            for item in items {
                self.selector(&item.selector);
            }
        }
        self.relations(&s.where_clause);
        for g in &s.group_by {
            self.selector(g);
        }
        for o in &s.order_by {
            if let OrderDirection::Ann(t) = &o.direction {
                self.term(t, &BindReceiver::Column(o.column.clone()), Some(&o.column));
            }
        }
        if let Some(t) = &s.per_partition_limit {
            self.term(t, &BindReceiver::PerPartitionLimit, None);
        }
        if let Some(t) = &s.limit {
            self.term(t, &BindReceiver::Limit, None);
        }
    }

    fn insert(&mut self, i: &InsertStatement) {
        match &i.values {
            InsertValues::Values { columns, values } => {
                for (c, v) in columns.iter().zip(values) {
                    self.term(v, &BindReceiver::Column(c.clone()), Some(c));
                }
            }
            InsertValues::Json { value, .. } => self.term(value, &BindReceiver::JsonDocument, None),
        }
        self.using(&i.using);
    }

    fn update(&mut self, u: &UpdateStatement) {
        self.using(&u.using);
        for a in &u.assignments {
            match a {
                Assignment::Set { column, value }
                | Assignment::Add { column, value }
                | Assignment::Prepend { column, value }
                | Assignment::Subtract { column, value } => {
                    self.term(value, &BindReceiver::Column(column.clone()), Some(column));
                }
                Assignment::SetElement { column, key, value } => {
                    self.term(key, &BindReceiver::CollectionKey(column.clone()), None);
                    self.term(value, &BindReceiver::CollectionValue(column.clone()), None);
                }
                Assignment::SetField {
                    column,
                    field,
                    value,
                } => {
                    let r = BindReceiver::Field {
                        column: column.clone(),
                        field: field.clone(),
                    };
                    self.term(value, &r, None);
                }
            }
        }
        self.relations(&u.where_clause);
        self.condition(u.condition.as_ref());
    }

    fn delete(&mut self, d: &DeleteStatement) {
        for item in &d.columns {
            if let Some(SubPath::Element(k)) = &item.path {
                self.term(k, &BindReceiver::CollectionKey(item.column.clone()), None);
            }
        }
        self.using(&d.using);
        self.relations(&d.where_clause);
        self.condition(d.condition.as_ref());
    }

    fn using(&mut self, u: &UsingClause) {
        if let Some(t) = &u.ttl {
            self.term(t, &BindReceiver::Ttl, None);
        }
        if let Some(t) = &u.timestamp {
            self.term(t, &BindReceiver::Timestamp, None);
        }
    }

    fn condition(&mut self, c: Option<&WriteCondition>) {
        let Some(WriteCondition::Columns(conds)) = c else {
            return;
        };
        for cond in conds {
            let whole = match &cond.path {
                None => BindReceiver::Column(cond.column.clone()),
                Some(SubPath::Element(k)) => {
                    self.term(k, &BindReceiver::CollectionKey(cond.column.clone()), None);
                    BindReceiver::CollectionValue(cond.column.clone())
                }
                Some(SubPath::Field(f)) => BindReceiver::Field {
                    column: cond.column.clone(),
                    field: f.clone(),
                },
            };
            let column = cond.path.is_none().then_some(&cond.column);
            self.relation_value(&cond.column, cond.op, &cond.value, whole, column);
        }
    }

    fn relations(&mut self, rels: &[Relation]) {
        for r in rels {
            match r {
                Relation::Column { column, op, value } => {
                    let whole = BindReceiver::Column(column.clone());
                    self.relation_value(column, *op, value, whole, Some(column));
                }
                Relation::Element {
                    column, key, value, ..
                } => {
                    self.term(key, &BindReceiver::CollectionKey(column.clone()), None);
                    self.term(value, &BindReceiver::CollectionValue(column.clone()), None);
                }
                Relation::Token { columns, value, .. } => {
                    self.each_value(value, &BindReceiver::Token(columns.clone()));
                }
                Relation::MultiColumn { columns, op, value } => {
                    self.multi_column(columns, *op, value)
                }
                Relation::CustomIndexExpression { value, .. } => {
                    self.term(value, &BindReceiver::Unknown, None);
                }
            }
        }
    }

    fn each_value(&mut self, v: &RelationValue, r: &BindReceiver) {
        match v {
            RelationValue::Single(t) => self.term(t, r, None),
            RelationValue::List(ts) => ts.iter().for_each(|t| self.term(t, r, None)),
            RelationValue::Between(a, b) => {
                self.term(a, r, None);
                self.term(b, r, None);
            }
        }
    }

    /// The right-hand side of `column op value`; `whole` is the receiver of a plain value.
    fn relation_value(
        &mut self,
        column: &Ident,
        op: Operator,
        value: &RelationValue,
        whole: BindReceiver,
        literal_column: Option<&Ident>,
    ) {
        match (op, value) {
            (Operator::In | Operator::NotIn, RelationValue::Single(Term::Bind(b))) => {
                self.set(b, BindReceiver::InValues(column.clone()));
            }
            (Operator::Contains | Operator::NotContains, _) => {
                self.each_value(value, &BindReceiver::CollectionValue(column.clone()));
            }
            (Operator::ContainsKey | Operator::NotContainsKey, _) => {
                self.each_value(value, &BindReceiver::CollectionKey(column.clone()));
            }
            (_, RelationValue::Single(t)) => self.term(t, &whole, literal_column),
            (_, RelationValue::List(ts)) => {
                ts.iter().for_each(|t| self.term(t, &whole, literal_column))
            }
            (_, RelationValue::Between(a, b)) => {
                self.term(a, &whole, literal_column);
                self.term(b, &whole, literal_column);
            }
        }
    }

    fn multi_column(&mut self, columns: &[Ident], op: Operator, value: &RelationValue) {
        let tuple = |p: &mut Collector, t: &Term| match t {
            Term::Bind(b) => p.set(b, BindReceiver::ColumnTuple(columns.to_vec())),
            Term::Tuple(items) => {
                for (c, item) in columns.iter().zip(items) {
                    p.term(item, &BindReceiver::Column(c.clone()), Some(c));
                }
            }
            other => p.term(other, &BindReceiver::Unknown, None),
        };
        match (op, value) {
            (_, RelationValue::Single(Term::Bind(b)))
                if matches!(op, Operator::In | Operator::NotIn) =>
            {
                self.set(b, BindReceiver::ColumnTupleInValues(columns.to_vec()));
            }
            (_, RelationValue::Single(t)) => tuple(self, t),
            (_, RelationValue::List(ts)) => ts.iter().for_each(|t| tuple(self, t)),
            (_, RelationValue::Between(a, b)) => {
                tuple(self, a);
                tuple(self, b);
            }
        }
    }

    /// Visits a term whose value goes to `r`; `column` is set when the term is a whole value of
    /// that column, so collection/UDT/tuple literals can name their elements.
    fn term(&mut self, t: &Term, r: &BindReceiver, column: Option<&Ident>) {
        match t {
            Term::Bind(b) => self.set(b, r.clone()),
            Term::List(items) | Term::Set(items) => {
                let elem = column.map_or(BindReceiver::Unknown, |c| {
                    BindReceiver::CollectionValue(c.clone())
                });
                items.iter().for_each(|i| self.term(i, &elem, None));
            }
            Term::Map(entries) => {
                let key = column.map_or(BindReceiver::Unknown, |c| {
                    BindReceiver::CollectionKey(c.clone())
                });
                let value = column.map_or(BindReceiver::Unknown, |c| {
                    BindReceiver::CollectionValue(c.clone())
                });
                for (k, v) in entries {
                    self.term(k, &key, None);
                    self.term(v, &value, None);
                }
            }
            Term::Tuple(items) => {
                for (position, i) in items.iter().enumerate() {
                    let r = column.map_or(BindReceiver::Unknown, |c| BindReceiver::TupleElement {
                        column: c.clone(),
                        position,
                    });
                    self.term(i, &r, None);
                }
            }
            Term::Udt(fields) => {
                for (field, v) in fields {
                    let r = column.map_or(BindReceiver::Unknown, |c| BindReceiver::Field {
                        column: c.clone(),
                        field: field.clone(),
                    });
                    self.term(v, &r, None);
                }
            }
            Term::FunctionCall { name, args } => {
                for (position, a) in args.iter().enumerate() {
                    let r = BindReceiver::FunctionArgument {
                        function: name.clone(),
                        position,
                    };
                    self.term(a, &r, None);
                }
            }
            Term::TypeHint { ty, term } => {
                self.term(term, &BindReceiver::TypeHint(ty.clone()), None)
            }
            Term::Binary { left, right, .. } => {
                self.term(left, r, None);
                self.term(right, r, None);
            }
            Term::Negate(inner) => self.term(inner, r, None),
            _ => {}
        }
    }

    fn selector(&mut self, s: &Selector) {
        match s {
            Selector::Term(t) => self.term(t, &BindReceiver::Unknown, None),
            Selector::FunctionCall { name, args } => {
                for (position, a) in args.iter().enumerate() {
                    if let Selector::Term(t) = a {
                        let r = BindReceiver::FunctionArgument {
                            function: name.clone(),
                            position,
                        };
                        self.term(t, &r, None);
                    } else {
                        self.selector(a);
                    }
                }
            }
            Selector::Element { selector, key } => {
                let r = match selector.as_ref() {
                    Selector::Column(c) => BindReceiver::CollectionKey(c.clone()),
                    _ => BindReceiver::Unknown,
                };
                self.selector(selector);
                self.term(key, &r, None);
            }
            Selector::Slice { selector, from, to } => {
                let r = match selector.as_ref() {
                    Selector::Column(c) => BindReceiver::CollectionKey(c.clone()),
                    _ => BindReceiver::Unknown,
                };
                self.selector(selector);
                for t in [from, to].into_iter().flatten() {
                    self.term(t, &r, None);
                }
            }
            Selector::TypeHint { ty, selector } => match selector.as_ref() {
                Selector::Term(t) => self.term(t, &BindReceiver::TypeHint(ty.clone()), None),
                other => self.selector(other),
            },
            Selector::Cast { selector, .. }
            | Selector::WriteTime(selector)
            | Selector::MaxWriteTime(selector)
            | Selector::Ttl(selector)
            | Selector::Field { selector, .. }
            | Selector::Negate(selector) => self.selector(selector),
            Selector::Binary { left, right, .. } => {
                self.selector(left);
                self.selector(right);
            }
            Selector::List(items) | Selector::Set(items) | Selector::Tuple(items) => {
                items.iter().for_each(|i| self.selector(i));
            }
            Selector::Map(entries) => {
                for (k, v) in entries {
                    self.selector(k);
                    self.selector(v);
                }
            }
            Selector::Column(_) | Selector::CountStar => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn receivers(cql: &str) -> Vec<BindReceiver> {
        bind_receivers(&parse(cql).unwrap())
    }

    fn col(s: &str) -> Ident {
        Ident::unquoted(s)
    }

    #[test]
    fn insert_values_and_using_bind_to_columns_ttl_and_timestamp() {
        let r = receivers("INSERT INTO t (a, b) VALUES (?, [?]) USING TTL ? AND TIMESTAMP ?");
        assert_eq!(
            r,
            vec![
                BindReceiver::Column(col("a")),
                BindReceiver::CollectionValue(col("b")),
                BindReceiver::Ttl,
                BindReceiver::Timestamp,
            ]
        );
    }

    #[test]
    fn where_in_token_and_limit_receivers() {
        let r = receivers(
            "SELECT * FROM t WHERE token(k) > ? AND a IN ? AND b IN (?, ?) AND (c, d) = (?, ?) \
             AND (c, d) IN ? AND m CONTAINS KEY ? LIMIT ?",
        );
        assert_eq!(r[0], BindReceiver::Token(vec![col("k")]));
        assert_eq!(r[1], BindReceiver::InValues(col("a")));
        assert_eq!(r[2], BindReceiver::Column(col("b")));
        assert_eq!(r[4], BindReceiver::Column(col("c")));
        assert_eq!(r[5], BindReceiver::Column(col("d")));
        assert_eq!(
            r[6],
            BindReceiver::ColumnTupleInValues(vec![col("c"), col("d")])
        );
        assert_eq!(r[7], BindReceiver::CollectionKey(col("m")));
        assert_eq!(r[8], BindReceiver::Limit);
    }

    #[test]
    fn update_element_field_and_condition_receivers() {
        let r = receivers("UPDATE t SET m[?] = ?, u.f = ?, c = c + ? WHERE k = ? IF x = ?");
        assert_eq!(
            r,
            vec![
                BindReceiver::CollectionKey(col("m")),
                BindReceiver::CollectionValue(col("m")),
                BindReceiver::Field {
                    column: col("u"),
                    field: col("f")
                },
                BindReceiver::Column(col("c")),
                BindReceiver::Column(col("k")),
                BindReceiver::Column(col("x")),
            ]
        );
    }

    #[test]
    fn json_function_arguments_and_hints() {
        assert_eq!(
            receivers("INSERT INTO t JSON ?"),
            vec![BindReceiver::JsonDocument]
        );
        let r = receivers("SELECT f(?) FROM t WHERE a = (int) ?");
        assert!(matches!(
            &r[0],
            BindReceiver::FunctionArgument { position: 0, .. }
        ));
        assert_eq!(
            r[1],
            BindReceiver::TypeHint(CqlTypeExpr::Native(NativeType::Int))
        );
    }
}
