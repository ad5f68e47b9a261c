//! The cells of one written row: values for each operation (including collection elements, UDT
//! fields and read-before-write list operations) and decoding `INSERT ... JSON`.

use super::{op_value_type, Op, WriteContext, WriteKind, WritePlan};
use crate::exec::error::{invalid, ExecError, ExecResult};
use crate::exec::values::{self, Binds, Bound};
use bytes::Bytes;
use helenus_cql::ast::{SubPath, Term};
use helenus_schema::{ColumnKind, ColumnMeta};
use helenus_storage as st;
use helenus_types::{CqlType, CqlValue, NativeType};

/// INSERT JSON decoded: regular columns, partition key components, clustering values.
pub(super) type JsonRow = (Vec<(usize, Bound)>, Vec<Bytes>, Vec<Bytes>);

/// Where a row being written lives, for read-before-write list operations.
pub(super) struct RowAt<'a> {
    pub(super) key: &'a Bytes,
    pub(super) token: i64,
    pub(super) clustering: &'a [Bytes],
}

/// (path, value) of every element of a list column of the row being written.
fn list_cells(
    ctx: &WriteContext<'_>,
    at: &Option<RowAt<'_>>,
    col: u32,
    name: &str,
) -> ExecResult<Vec<(Bytes, Bytes)>> {
    match (ctx.lists, at) {
        (Some(lookup), Some(at)) => lookup(at.key, at.token, at.clustering, col),
        _ => invalid(format!(
            "List operations by index on {name} need a single row"
        )),
    }
}

fn list_index(k: &Term, name: &str, binds: &Binds<'_>) -> ExecResult<i64> {
    match values::eval(k, &CqlType::Native(NativeType::Int), name, binds)? {
        Bound::Value(b) if b.len() == 4 => Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64),
        _ => invalid(format!("Invalid null value for list index of {name}")),
    }
}

/// A list element's cell path: a time UUID from the node's clock, so appends sort in time order.
fn list_path(now: &crate::exec_state::Now<'_>) -> Bytes {
    Bytes::copy_from_slice(now.timeuuid().as_bytes())
}

fn field_path(i: usize) -> Bytes {
    Bytes::copy_from_slice(&(i as i16).to_be_bytes())
}

/// Cells for setting a whole multi-cell value (already decoded).
fn collection_cells(
    col: u32,
    v: &CqlValue,
    (ts, ttl): (i64, u32),
    now: &crate::exec_state::Now<'_>,
    out: &mut Vec<st::CellUpdate>,
) {
    let set = |path: Bytes, value: Bytes| st::CellUpdate {
        column: col,
        path: Some(path),
        timestamp_us: ts,
        op: st::CellOp::Set { value, ttl_s: ttl },
    };
    match v {
        CqlValue::List(items) => {
            for it in items {
                out.push(set(list_path(now), values::serialize(it)));
            }
        }
        CqlValue::Set(items) => {
            for it in items {
                out.push(set(values::serialize(it), Bytes::new()));
            }
        }
        CqlValue::Map(entries) => {
            for (k, val) in entries {
                out.push(set(values::serialize(k), values::serialize(val)));
            }
        }
        CqlValue::Udt(fields) => {
            for (i, (_, fv)) in fields.iter().enumerate() {
                if let Some(fv) = fv {
                    out.push(set(field_path(i), values::serialize(fv)));
                }
            }
        }
        _ => {}
    }
}

/// Builds the cells of one row for the plan's operations.
#[allow(clippy::too_many_arguments)]
pub(super) fn row_cells(
    plan: &WritePlan,
    binds: &Binds<'_>,
    ctx: &WriteContext<'_>,
    at: Option<RowAt<'_>>,
    ts: i64,
    ttl: u32,
    json_values: &Option<Vec<(usize, Bound)>>,
    out: &mut Vec<st::CellUpdate>,
) -> ExecResult<()> {
    let t = &plan.table;
    let mut ops: Vec<(usize, Op, Option<Bound>)> = plan
        .ops
        .iter()
        .map(|(i, o)| (*i, o.clone(), None))
        .collect();
    if let Some(jv) = json_values {
        for (i, b) in jv {
            ops.push((*i, Op::Set(Term::Null), Some(b.clone())));
        }
    }
    let mut row = RowCells {
        binds,
        ctx,
        at: &at,
        ts,
        ttl,
        out,
        table: t,
        expanded: 0,
        lists: Vec::new(),
    };
    let read_lists = lists_read_by(&ops, t);
    for (i, op, pre) in ops {
        let c = &t.columns[i];
        if read_lists.contains(&c.id) && !row.lists.iter().any(|(id, _)| *id == c.id) {
            let cells = list_cells(row.ctx, row.at, c.id, &c.name)?;
            row.lists.push((c.id, cells));
        }
        let start = row.out.len();
        let prepend = matches!(op, Op::Prepend(_));
        match op {
            Op::Set(term) => row.set(c, &term, pre)?,
            Op::Add(term) => row.add(c, &term, false)?,
            Op::Prepend(term) => row.add(c, &term, true)?,
            Op::Subtract(term) => row.subtract(c, &term)?,
            Op::SetElement(k, v) => row.set_element(c, &k, &v)?,
            Op::SetField(f, v) => row.set_field(c, f, &v)?,
            Op::Delete(path) => row.delete(c, path.as_ref())?,
        }
        row.follow_list(c.id, start, prepend);
    }
    Ok(())
}

/// The list columns whose current elements the statement reads (by index or by value).
fn lists_read_by(ops: &[(usize, Op, Option<Bound>)], t: &helenus_schema::TableMeta) -> Vec<u32> {
    ops.iter()
        .filter(|(i, op, _)| {
            matches!(t.columns[*i].cql_type, CqlType::List { frozen: false, .. })
                && matches!(
                    op,
                    Op::SetElement(..) | Op::Subtract(_) | Op::Delete(Some(SubPath::Element(_)))
                )
        })
        .map(|(i, _, _)| t.columns[*i].id)
        .collect()
}

/// One row being written: what its operations are evaluated with, and where their cells go.
struct RowCells<'r, 'b, 'c, 'a> {
    binds: &'r Binds<'b>,
    ctx: &'r WriteContext<'c>,
    at: &'r Option<RowAt<'a>>,
    ts: i64,
    ttl: u32,
    out: &'r mut Vec<st::CellUpdate>,
    table: &'r helenus_schema::TableMeta,
    /// Bytes of cells the row's collection values expanded to so far (the mutation size bound).
    expanded: u64,
    /// The elements (path, value) of the list columns the statement reads, as its operations
    /// so far have left them: Cassandra applies a statement's list operations in order, each
    /// seeing the previous ones (`SET l = l + [3, 4], l[3] = 7` sets the appended 4).
    lists: Vec<(u32, Vec<(Bytes, Bytes)>)>,
}

impl RowCells<'_, '_, '_, '_> {
    /// The list's elements as the statement's operations so far have left them.
    fn current_list(&mut self, c: &ColumnMeta) -> ExecResult<Vec<(Bytes, Bytes)>> {
        match self.lists.iter().find(|(id, _)| *id == c.id) {
            Some((_, cells)) => Ok(cells.clone()),
            None => list_cells(self.ctx, self.at, c.id, &c.name),
        }
    }

    /// Applies the cells an operation pushed from `start` on to the column's list view. Two
    /// values for one element at one timestamp reconcile as in storage: the greater one wins
    /// (`SET l[2] = 9, l[2] = 6` keeps 9), a deletion over any value.
    fn follow_list(&mut self, col: u32, start: usize, prepend: bool) {
        let ts = self.ts;
        let Some(i) = self.lists.iter().position(|(id, _)| *id == col) else {
            return;
        };
        let (done, new) = self.out.split_at(start);
        let cells = &mut self.lists[i].1;
        let mut added = Vec::new();
        for u in new.iter().filter(|u| u.column == col) {
            match (&u.path, &u.op) {
                (None, _) => cells.clear(),
                (Some(p), st::CellOp::Set { value, .. }) => {
                    let earlier = done.iter().any(|d| {
                        d.column == col && d.timestamp_us == ts && d.path.as_ref() == Some(p)
                    });
                    match cells.iter_mut().find(|(q, _)| q == p) {
                        Some((_, v)) if !earlier || value > v => *v = value.clone(),
                        Some(_) => {}
                        None => added.push((p.clone(), value.clone())),
                    }
                }
                (Some(p), _) => cells.retain(|(q, _)| q != p),
            }
        }
        if prepend {
            added.append(cells);
        } else {
            cells.append(&mut added);
            return;
        }
        *cells = added;
    }

    fn push(&mut self, column: u32, path: Option<Bytes>, op: st::CellOp) {
        self.out.push(st::CellUpdate {
            column,
            path,
            timestamp_us: self.ts,
            op,
        });
    }

    fn set_op(&self, value: Bytes) -> st::CellOp {
        st::CellOp::Set {
            value,
            ttl_s: self.ttl,
        }
    }

    /// `c = t`, or an INSERT value (`pre`: already bound by INSERT JSON).
    fn set(&mut self, c: &ColumnMeta, term: &Term, pre: Option<Bound>) -> ExecResult<()> {
        let bound = match pre {
            Some(b) => b,
            None => values::eval(term, &c.cql_type, &c.name, self.binds)?,
        };
        let multi = c.cql_type.is_multi_cell();
        match (bound, multi) {
            (Bound::Unset, _) => {}
            (Bound::Null, false) => self.push(c.id, None, st::CellOp::Delete),
            (Bound::Null, true) => self.push(c.id, None, st::CellOp::DeleteComplex),
            (Bound::Value(b), false) => {
                let op = self.set_op(b);
                self.push(c.id, None, op);
            }
            (Bound::Value(b), true) => {
                // Overwrite: drop what was there just before this write's timestamp.
                self.out.push(st::CellUpdate {
                    column: c.id,
                    path: None,
                    timestamp_us: self.ts - 1,
                    op: st::CellOp::DeleteComplex,
                });
                self.serialized_collection(c, &b)?;
            }
        }
        Ok(())
    }

    /// The cells of a whole collection value `b` of `c`'s type, checked against the mutation
    /// size bound before any is made. A UDT's cells (one per field) are few: decoded as before.
    fn serialized_collection(&mut self, c: &ColumnMeta, b: &Bytes) -> ExecResult<()> {
        if !self.check_expansion(c, b)? {
            let v = helenus_types::deserialize(&c.cql_type, b)
                .map_err(|e| ExecError::Invalid(e.to_string()))?;
            collection_cells(c.id, &v, (self.ts, self.ttl), &self.binds.now, self.out);
            return Ok(());
        }
        let now = &self.binds.now;
        let mut sink = super::expand::CellSink {
            column: c.id,
            timestamp_us: self.ts,
            ttl_s: self.ttl,
            out: self.out,
        };
        super::expand::collection_cells(&c.cql_type, b, || now.timeuuid().into_bytes(), &mut sink)
    }

    /// Adds the cells list, set or map value `b` of `c` would expand to to the row's total, and
    /// refuses the write past `max_mutation_size`; false for other types (not checked here).
    fn check_expansion(&mut self, c: &ColumnMeta, b: &[u8]) -> ExecResult<bool> {
        let Some(size) = super::expand::cells_size(&c.cql_type, b) else {
            return Ok(false);
        };
        self.expanded = self.expanded.saturating_add(size);
        if self.expanded > self.ctx.max_mutation_bytes {
            let key = self.at.as_ref().map(|at| at.key.as_ref());
            return Err(crate::exec::write_checks::oversized_mutation(
                self.expanded,
                self.ctx.max_mutation_bytes,
                self.table,
                key,
            ));
        }
        Ok(true)
    }

    /// `c = c + t` (a counter increment or collection append) and `c = t + c` (a list prepend).
    fn add(&mut self, c: &ColumnMeta, term: &Term, is_prepend: bool) -> ExecResult<()> {
        if c.cql_type.is_counter() {
            self.out
                .extend(counter_update(c, c.id, self.ts, term, self.binds, false)?);
            return Ok(());
        }
        if !is_prepend
            && matches!(
                c.cql_type,
                CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. }
            )
        {
            return self.append(c, term);
        }
        if is_prepend {
            // Bounded before the elements are decoded, like a whole-value write.
            if let Bound::Value(b) = values::eval(term, &c.cql_type, &c.name, self.binds)? {
                self.check_expansion(c, &b)?;
            }
        }
        match values::to_value(term, &c.cql_type, &c.name, self.binds)? {
            // Prepended elements get paths that sort before every existing one.
            Some(CqlValue::List(items)) if is_prepend => {
                let paths = self.ctx.prepends.next(items.len());
                for (path, it) in paths.into_iter().zip(&items) {
                    let op = self.set_op(values::serialize(it));
                    self.push(c.id, Some(path), op);
                }
            }
            Some(v) => collection_cells(c.id, &v, (self.ts, self.ttl), &self.binds.now, self.out),
            None => {}
        }
        Ok(())
    }

    /// `c = c + t` appending to a list or adding to a set or map: from the serialized value,
    /// as a whole-value write.
    fn append(&mut self, c: &ColumnMeta, term: &Term) -> ExecResult<()> {
        match values::eval(term, &c.cql_type, &c.name, self.binds)? {
            Bound::Value(b) => self.serialized_collection(c, &b),
            Bound::Null | Bound::Unset => Ok(()),
        }
    }

    /// `c = c - t`: a counter decrement, or removal of set elements or of list values (read
    /// before write).
    fn subtract(&mut self, c: &ColumnMeta, term: &Term) -> ExecResult<()> {
        if c.cql_type.is_counter() {
            self.out
                .extend(counter_update(c, c.id, self.ts, term, self.binds, true)?);
            return Ok(());
        }
        let vt = op_value_type(&c.cql_type, &Op::Subtract(Term::Null));
        match values::to_value(term, &vt, &c.name, self.binds)? {
            Some(CqlValue::Set(items)) => {
                for it in items {
                    self.push(c.id, Some(values::serialize(&it)), st::CellOp::Delete);
                }
            }
            Some(CqlValue::List(items)) => {
                let remove: Vec<Bytes> = items.iter().map(values::serialize).collect();
                for (path, value) in self.current_list(c)? {
                    if remove.contains(&value) {
                        self.push(c.id, Some(path), st::CellOp::Delete);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `c[k] = v` of a map or (by index, read before write) of a list.
    fn set_element(&mut self, c: &ColumnMeta, k: &Term, v: &Term) -> ExecResult<()> {
        match &c.cql_type {
            CqlType::Map { key, value, .. } => {
                let Bound::Value(kb) = values::eval(k, key, &c.name, self.binds)? else {
                    return invalid(format!("Invalid null map key for {}", c.name));
                };
                match values::eval(v, value, &c.name, self.binds)? {
                    Bound::Value(vb) => {
                        let op = self.set_op(vb);
                        self.push(c.id, Some(kb), op);
                    }
                    Bound::Null => self.push(c.id, Some(kb), st::CellOp::Delete),
                    Bound::Unset => {}
                }
            }
            CqlType::List { element, .. } => {
                let path = self.list_element_path(c, k)?;
                let op = match values::eval(v, element, &c.name, self.binds)? {
                    Bound::Value(vb) => self.set_op(vb),
                    _ => st::CellOp::Delete,
                };
                self.push(c.id, Some(path), op);
            }
            _ => {
                return invalid(format!(
                    "Invalid operation ({}[?] = ?) for non collection column {}",
                    c.name, c.name
                ))
            }
        }
        Ok(())
    }

    /// The path of the list element at index `k` of the row's current list.
    fn list_element_path(&mut self, c: &ColumnMeta, k: &Term) -> ExecResult<Bytes> {
        let idx = list_index(k, &c.name, self.binds)?;
        let paths = self.current_list(c)?;
        match usize::try_from(idx).ok().and_then(|i| paths.get(i)) {
            Some((path, _)) => Ok(path.clone()),
            None => invalid(format!(
                "List index {idx} out of bound, list has size {}",
                paths.len()
            )),
        }
    }

    /// `c.f = v` of a non-frozen UDT.
    fn set_field(&mut self, c: &ColumnMeta, f: usize, v: &Term) -> ExecResult<()> {
        let CqlType::Udt { def, .. } = &c.cql_type else {
            return Ok(());
        };
        let Some((_, ft)) = def.fields.get(f) else {
            return Ok(());
        };
        match values::eval(v, ft, &c.name, self.binds)? {
            Bound::Value(vb) => {
                let op = self.set_op(vb);
                self.push(c.id, Some(field_path(f)), op);
            }
            Bound::Null => self.push(c.id, Some(field_path(f)), st::CellOp::Delete),
            Bound::Unset => {}
        }
        Ok(())
    }

    /// `DELETE c`, `DELETE c[k]` and `DELETE c.f`.
    fn delete(&mut self, c: &ColumnMeta, path: Option<&SubPath>) -> ExecResult<()> {
        match path {
            None => {
                let op = if c.cql_type.is_multi_cell() {
                    st::CellOp::DeleteComplex
                } else {
                    st::CellOp::Delete
                };
                self.push(c.id, None, op);
            }
            Some(SubPath::Element(k)) => {
                let kt = match &c.cql_type {
                    CqlType::Map { key, .. } => (**key).clone(),
                    CqlType::Set { element, .. } => (**element).clone(),
                    CqlType::List { .. } => {
                        let path = self.list_element_path(c, k)?;
                        self.push(c.id, Some(path), st::CellOp::Delete);
                        return Ok(());
                    }
                    _ => {
                        return invalid(format!(
                            "Invalid deletion of element of non collection column {}",
                            c.name
                        ))
                    }
                };
                if let Bound::Value(kb) = values::eval(k, &kt, &c.name, self.binds)? {
                    self.push(c.id, Some(kb), st::CellOp::Delete);
                }
            }
            Some(SubPath::Field(f)) => {
                if let CqlType::Udt { def, .. } = &c.cql_type {
                    if let Some(i) = def.fields.iter().position(|(n, _)| n == &f.name) {
                        self.push(c.id, Some(field_path(i)), st::CellOp::Delete);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Decodes `INSERT ... JSON` into (column, value) pairs; key columns come back separately.
pub(super) fn json_values(plan: &WritePlan, binds: &Binds<'_>) -> ExecResult<Option<JsonRow>> {
    let WriteKind::InsertJson {
        json,
        default_unset,
    } = &plan.kind
    else {
        return Ok(None);
    };
    let t = &plan.table;
    let text = match values::to_value(json, &CqlType::Native(NativeType::Varchar), "[json]", binds)?
    {
        Some(CqlValue::Text(s)) => s,
        _ => return invalid("Got null for INSERT JSON values"),
    };
    let parsed = crate::exec::json::parse_object(&text)?;
    let mut cols = Vec::new();
    let mut pk = vec![Bytes::new(); t.partition_key_len()];
    let mut ck = vec![Bytes::new(); t.clustering_len()];
    for (name, _) in &parsed {
        if t.column(name).is_none() {
            return invalid(format!(
                "JSON values map contains unrecognized column: {name}"
            ));
        }
    }
    for (i, c) in t.columns.iter().enumerate() {
        let v = parsed.iter().find(|(n, _)| n == &c.name).map(|(_, v)| v);
        let bound = match v {
            None => {
                if *default_unset {
                    Bound::Unset
                } else {
                    Bound::Null
                }
            }
            Some(j) => match crate::exec::json::from_json(&c.cql_type, j)? {
                Some(v) => Bound::Value(values::serialize(&v)),
                None => Bound::Null,
            },
        };
        match c.kind {
            ColumnKind::PartitionKey | ColumnKind::Clustering => {
                let Bound::Value(b) = bound else {
                    return invalid(format!(
                        "Invalid null value in condition for column {}",
                        c.name
                    ));
                };
                let p = c.position.max(0) as usize;
                if c.kind == ColumnKind::PartitionKey {
                    if let Some(slot) = pk.get_mut(p) {
                        *slot = b;
                    }
                } else if let Some(slot) = ck.get_mut(p) {
                    *slot = b;
                }
            }
            _ => cols.push((i, bound)),
        }
    }
    Ok(Some((cols, pk, ck)))
}

/// `n = n + d` / `n = n - d` on a counter: one delta cell (none for an unset value).
fn counter_update(
    c: &helenus_schema::ColumnMeta,
    id: u32,
    ts: i64,
    term: &Term,
    binds: &Binds<'_>,
    subtract: bool,
) -> ExecResult<Option<st::CellUpdate>> {
    let ty = CqlType::Native(NativeType::Bigint);
    match values::eval(term, &ty, &c.name, binds)? {
        Bound::Null => invalid("Invalid null value for counter increment/decrement"),
        Bound::Unset => Ok(None),
        Bound::Value(b) => {
            let d = i64::from_be_bytes(b.as_ref().try_into().unwrap_or([0; 8]));
            Ok(Some(st::CellUpdate {
                column: id,
                path: None,
                timestamp_us: ts,
                op: st::CellOp::CounterAdd(if subtract { d.wrapping_neg() } else { d }),
            }))
        }
    }
}
