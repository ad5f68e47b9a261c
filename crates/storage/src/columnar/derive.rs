//! Columns that are functions of another column within a row group. Real tables repeat facts:
//! GDELT's geo columns (name, ADM1 code, latitude, longitude, country) are all fixed by the
//! place's feature id, its MonthYear, Year and FractionDate by SQLDATE, its base and root event
//! codes by the event code. Coded one by one, each such column pays for its values row by row
//! again (on 4.16M GDELT events, about a third of the segment); stored as a mapping from the
//! determining column's distinct values, it costs one entry per distinct value.
//!
//! A derived chunk holds column B's value for each distinct value of its determinant A (null
//! counts as a value), in the order A's values first appear in the group; the chunk's footer
//! statistics are B's own over all rows, so skipping works as for any chunk. A reader decodes
//! A (which is never derived itself), numbers its values the same way and looks B's values up.
//! The writer looks for determinants only among numeric columns whose group has few distinct
//! values (at most a quarter of its rows), so a mapping is always much shorter than the column
//! and a reader numbers the determinant's rows through a table or an integer hash.

use super::vector::{Bitmap, BytesVec, Column, ColumnValues, Physical};
use super::ColumnarError;
use std::collections::HashMap;

/// A column determines others only when it has at most rows / this many distinct values.
const DETERMINANT_SHARE: usize = 4;

/// Groups smaller than this are not worth a search.
const MIN_ROWS: usize = 64;

/// A column with fewer distinct values in a group is coded alone: it costs at most 7 bits a row
/// that way, and it is the kind a query filters on (a month, a year, a type), whose own codes a
/// restriction tests without decoding and numbering another column (on 1M GDELT rows, an
/// aggregate filtered on a MonthYear derived from the date took 16 ms, 12 ms coded alone).
const MIN_DERIVED_DISTINCT: usize = 128;

/// A column's values numbered in order of first appearance (null included).
pub(super) struct Numbering {
    /// Per row, the number of its value.
    pub ids: Vec<u32>,
    /// Per number, the first row holding that value.
    pub first_rows: Vec<usize>,
}

impl Numbering {
    pub fn distinct(&self) -> usize {
        self.first_rows.len()
    }
}

#[derive(PartialEq, Eq, Hash, Clone, Copy)]
enum Key<'a> {
    Null,
    Number(u64),
    Bytes(&'a [u8]),
}

fn key(col: &Column, i: usize) -> Key<'_> {
    if !col.is_valid(i) {
        return Key::Null;
    }
    match &col.values {
        ColumnValues::Int(v) => v.get(i).map_or(Key::Null, |x| Key::Number(*x as u64)),
        ColumnValues::Float32(v) => v
            .get(i)
            .map_or(Key::Null, |x| Key::Number(u64::from(x.to_bits()))),
        ColumnValues::Float64(v) => v.get(i).map_or(Key::Null, |x| Key::Number(x.to_bits())),
        ColumnValues::Bytes(v) => Key::Bytes(v.get(i)),
    }
}

/// Builds a numbering row by row, refusing more than `limit` distinct values.
struct Numberer {
    ids: Vec<u32>,
    first_rows: Vec<usize>,
    null_id: Option<u32>,
    limit: usize,
}

impl Numberer {
    fn new(rows: usize, limit: usize) -> Self {
        Numberer {
            ids: Vec::with_capacity(rows),
            first_rows: Vec::new(),
            null_id: None,
            limit,
        }
    }

    /// The number a new value at row `i` gets; None past the limit.
    fn fresh(&mut self, i: usize) -> Option<u32> {
        if self.first_rows.len() >= self.limit {
            return None;
        }
        self.first_rows.push(i);
        Some(self.first_rows.len() as u32 - 1)
    }

    fn null(&mut self, i: usize) -> Option<u32> {
        match self.null_id {
            Some(id) => Some(id),
            None => {
                let id = self.fresh(i)?;
                self.null_id = Some(id);
                Some(id)
            }
        }
    }

    fn done(self) -> Numbering {
        Numbering {
            ids: self.ids,
            first_rows: self.first_rows,
        }
    }
}

/// Integers spanning at most this many values per row are numbered through a table indexed by
/// value (a date column's few thousand days), not a hash map: a few nanoseconds per row, which
/// is what a scan of a derived column pays on top of its determinant's decoding.
const TABLE_SPAN_PER_ROW: i64 = 16;

/// Numbers `col`'s distinct values by first appearance; None once there are more than `limit`.
/// Floats are told apart by bit pattern, so a mapping gives back exactly the bits stored.
pub(super) fn number(col: &Column, limit: usize) -> Option<Numbering> {
    match &col.values {
        ColumnValues::Int(v) => number_ints(col, v, limit),
        ColumnValues::Float32(v) => number_by(col, limit, |i| {
            v.get(i).map_or(0, |x| u64::from(x.to_bits()))
        }),
        ColumnValues::Float64(v) => number_by(col, limit, |i| v.get(i).map_or(0, |x| x.to_bits())),
        ColumnValues::Bytes(v) => number_by(col, limit, |i| v.get(i)),
    }
}

fn number_by<K: std::hash::Hash + Eq>(
    col: &Column,
    limit: usize,
    key: impl Fn(usize) -> K,
) -> Option<Numbering> {
    let rows = col.len();
    let mut n = Numberer::new(rows, limit);
    let mut seen: HashMap<K, u32, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(limit.min(rows), Default::default());
    for i in 0..rows {
        let id = match col.is_valid(i) {
            false => n.null(i)?,
            true => match seen.get(&key(i)) {
                Some(id) => *id,
                None => {
                    let id = n.fresh(i)?;
                    seen.insert(key(i), id);
                    id
                }
            },
        };
        n.ids.push(id);
    }
    Some(n.done())
}

fn number_ints(col: &Column, v: &[i64], limit: usize) -> Option<Numbering> {
    let rows = col.len();
    let valid = (0..rows).filter(|i| col.is_valid(*i));
    let (min, max) = valid
        .filter_map(|i| v.get(i))
        .fold((i64::MAX, i64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    let span = max.checked_sub(min).and_then(|d| d.checked_add(1));
    let table_len = span.filter(|s| *s <= (rows as i64).saturating_mul(TABLE_SPAN_PER_ROW));
    let Some(table_len) = table_len else {
        return number_by(col, limit, |i| v.get(i).copied().unwrap_or(0));
    };
    let mut table = vec![u32::MAX; usize::try_from(table_len).ok()?];
    let mut n = Numberer::new(rows, limit);
    if col.validity.is_none() {
        for (i, x) in v.iter().enumerate() {
            let slot = table.get_mut(usize::try_from(x.wrapping_sub(min)).ok()?)?;
            if *slot == u32::MAX {
                *slot = n.fresh(i)?;
            }
            n.ids.push(*slot);
        }
        return Some(n.done());
    }
    for i in 0..rows {
        let id = match (col.is_valid(i), v.get(i)) {
            (true, Some(x)) => {
                let slot = table.get_mut(usize::try_from(x.wrapping_sub(min)).ok()?)?;
                if *slot == u32::MAX {
                    *slot = n.fresh(i)?;
                }
                *slot
            }
            _ => n.null(i)?,
        };
        n.ids.push(id);
    }
    Some(n.done())
}

/// Whether every row of `b` holds the value `b` holds at the first row of its `a` value.
fn is_function_of(a: &Numbering, b: &Column) -> bool {
    a.ids.iter().enumerate().all(|(i, id)| {
        a.first_rows
            .get(*id as usize)
            .is_some_and(|f| *f == i || key(b, *f) == key(b, i))
    })
}

/// `col`'s rows at `rows`, in that order (out-of-range rows read as null).
pub(super) fn gather(col: &Column, rows: impl ExactSizeIterator<Item = usize> + Clone) -> Column {
    let validity = col.validity.as_ref().map(|_| {
        let mut b = Bitmap::with_capacity(rows.len());
        for i in rows.clone() {
            b.push(col.is_valid(i));
        }
        b
    });
    let values = match &col.values {
        ColumnValues::Int(v) => {
            ColumnValues::Int(rows.map(|i| v.get(i).copied().unwrap_or(0)).collect())
        }
        ColumnValues::Float32(v) => {
            ColumnValues::Float32(rows.map(|i| v.get(i).copied().unwrap_or(0.0)).collect())
        }
        ColumnValues::Float64(v) => {
            ColumnValues::Float64(rows.map(|i| v.get(i).copied().unwrap_or(0.0)).collect())
        }
        ColumnValues::Bytes(v) => {
            let mut out = BytesVec::default();
            for i in rows {
                out.push(v.get(i));
            }
            ColumnValues::Bytes(out)
        }
    };
    Column { values, validity }
}

/// The column a derived chunk stands for: its `mapping` (one entry per distinct value of the
/// determinant) looked up through the determinant's numbering.
pub(super) fn expand(mapping: &Column, determinant: &Numbering) -> Result<Column, ColumnarError> {
    if mapping.len() != determinant.distinct() {
        return Err(ColumnarError::corrupt("derived chunk entries"));
    }
    Ok(gather(
        mapping,
        determinant.ids.iter().map(|id| *id as usize),
    ))
}

/// One derived stream of a row group: `stream` is stored as a mapping from `determinant`.
pub(super) struct Derivation {
    pub stream: usize,
    pub determinant: usize,
    /// The determinant's first row of each distinct value: where the mapping's entries are read.
    pub first_rows: Vec<usize>,
}

/// The streams among `candidates` (value streams of `cols`) to store as mappings, each with a
/// determinant that is not derived itself. Determinants are numeric columns (integers and
/// floats number at a few nanoseconds a row; text would cost a hash of each string on every
/// read of a column derived from it). Numeric columns are taken from most to fewest distinct
/// values: each is derived from the determinant with the fewest distinct values that fixes it,
/// or else becomes a determinant; text columns are then derived where a determinant fixes
/// them. Constant and all-null columns are left alone (their own encoding is a few bytes).
pub(super) fn choose(cols: &[Column], candidates: &[usize]) -> Vec<Derivation> {
    let rows = cols.get(S_ANY).map_or(0, Column::len);
    if rows < MIN_ROWS {
        return Vec::new();
    }
    let limit = rows / DETERMINANT_SHARE;
    let usable = |s: &usize| cols.get(*s).filter(|c| c.len() == rows && varies(c));
    let mut numbered: Vec<(usize, Numbering)> = candidates
        .iter()
        .filter(|s| usable(s).is_some_and(|c| c.values.physical() != Physical::Bytes))
        .filter_map(|s| Some((*s, number(cols.get(*s)?, limit)?)))
        .collect();
    // Among equals (a date and its fraction of a year), integers first: they number through
    // a table.
    numbered.sort_by_key(|(s, n)| {
        let float = cols
            .get(*s)
            .is_none_or(|c| c.values.physical() != Physical::Int);
        (std::cmp::Reverse(n.distinct()), float, *s)
    });
    let texts = candidates
        .iter()
        .filter(|s| usable(s).is_some_and(|c| c.values.physical() == Physical::Bytes));
    // Indexes into `numbered` of the determinants, in decreasing distinct counts: searched
    // from the end, so the one with the fewest values that fixes a column is found first.
    let mut determinants: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    // The derivation of stream `s` (values `b`) from the determinant with the fewest values
    // that fixes it.
    let find = |s: usize, b: &Column, determinants: &[usize]| {
        determinants
            .iter()
            .rev()
            .filter_map(|d| numbered.get(*d))
            .find(|(_, a)| is_function_of(a, b))
            .map(|(a, n)| Derivation {
                stream: s,
                determinant: *a,
                first_rows: n.first_rows.clone(),
            })
    };
    for (k, (s, n)) in numbered.iter().enumerate() {
        let Some(b) = cols.get(*s) else { continue };
        if n.distinct() < MIN_DERIVED_DISTINCT {
            // Not derived, and numbers after it have even fewer values: none will be.
            break;
        }
        match find(*s, b, &determinants) {
            Some(d) => out.push(d),
            None => determinants.push(k),
        }
    }
    // A text column fixed by a determinant is numbered (its strings hashed) only then, to learn
    // whether it has enough values to be derived.
    for s in texts {
        let Some(b) = cols.get(*s) else { continue };
        if let Some(d) = find(*s, b, &determinants) {
            if number(b, MIN_DERIVED_DISTINCT).is_none() {
                out.push(d);
            }
        }
    }
    out
}

/// Whether `col` holds at least two different values (null counting as one).
fn varies(col: &Column) -> bool {
    let first = key(col, 0);
    (1..col.len()).any(|i| key(col, i) != first)
}

/// Any stream: every stream of a group has one entry per row.
const S_ANY: usize = 0;

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Column {
        Column {
            values: ColumnValues::Int(v.to_vec()),
            validity: None,
        }
    }

    fn texts(v: &[Option<&str>]) -> Column {
        let mut b = BytesVec::default();
        let mut valid = Bitmap::default();
        for x in v {
            b.push(x.unwrap_or_default().as_bytes());
            valid.push(x.is_some());
        }
        Column {
            values: ColumnValues::Bytes(b),
            validity: Some(valid),
        }
    }

    #[test]
    fn numbering_follows_first_appearance_and_counts_null_as_a_value() {
        let c = texts(&[Some("b"), None, Some("a"), Some("b"), None]);
        let n = number(&c, 10).unwrap();
        assert_eq!(n.ids, vec![0, 1, 2, 0, 1]);
        assert_eq!(n.first_rows, vec![0, 1, 2]);
        assert!(number(&c, 2).is_none());
        // -0.0 and 0.0 are different values to a mapping.
        let f = Column {
            values: ColumnValues::Float64(vec![0.0, -0.0, 0.0]),
            validity: None,
        };
        assert_eq!(number(&f, 10).unwrap().distinct(), 2);
    }

    #[test]
    fn a_mapping_gathered_at_first_rows_expands_back_to_the_column() {
        let place = ints(&[7, 9, 7, 3, 9, 9, 3, 7]);
        let name = texts(&[
            Some("x"),
            None,
            Some("x"),
            Some("z"),
            None,
            None,
            Some("z"),
            Some("x"),
        ]);
        let n = number(&place, 8).unwrap();
        assert!(is_function_of(&n, &name));
        let mapping = gather(&name, n.first_rows.iter().copied());
        assert_eq!(mapping.len(), 3);
        assert_eq!(expand(&mapping, &n).unwrap(), name);
        let short = gather(&name, [0usize, 1].into_iter());
        assert!(expand(&short, &n).is_err());
        // Not a function: place 7 has two names.
        let other = texts(&[
            Some("x"),
            None,
            Some("y"),
            Some("z"),
            None,
            None,
            Some("z"),
            Some("x"),
        ]);
        assert!(!is_function_of(&n, &other));
    }

    #[test]
    fn choose_derives_only_from_columns_that_are_not_derived() {
        let rows = 2400;
        let place: Vec<i64> = (0..rows).map(|i| (i * 37 % 500) as i64).collect();
        let of_place =
            |f: &dyn Fn(i64) -> i64| ints(&place.iter().map(|p| f(*p)).collect::<Vec<_>>());
        // 0: place (500 values); 1: lat, a bijection of place; 2: district (200 values) fixed
        // by place; 3: noise (2,400 values); 4: a constant; 5: zone (150) fixed by district;
        // 6: country (5 values) fixed by place, too few values to be derived.
        let cols = vec![
            ints(&place),
            of_place(&|p| p * 1000 + 3),
            of_place(&|p| p % 200),
            ints(
                &(0..rows as i64)
                    .map(|i| i * 7919 % 2401)
                    .collect::<Vec<_>>(),
            ),
            ints(&vec![42; rows]),
            of_place(&|p| p % 200 % 150),
            of_place(&|p| p % 5),
        ];
        let d = choose(&cols, &[0, 1, 2, 3, 4, 5, 6]);
        let pairs: Vec<(usize, usize)> = d.iter().map(|x| (x.stream, x.determinant)).collect();
        // Zone is fixed by district too, but district is derived, so zone comes from place.
        assert_eq!(pairs, vec![(1, 0), (2, 0), (5, 0)]);
        for x in &d {
            assert!(!d.iter().any(|y| y.stream == x.determinant), "a chain");
            let n = number(&cols[x.determinant], rows).unwrap();
            assert_eq!(x.first_rows, n.first_rows);
            let b = &cols[x.stream];
            let mapping = gather(b, x.first_rows.iter().copied());
            assert_eq!(&expand(&mapping, &n).unwrap(), b);
        }
        assert!(choose(&cols[..1], &[0]).is_empty());
    }

    #[test]
    fn text_is_derived_from_numbers_but_never_determines() {
        let rows = 2000;
        let place: Vec<i64> = (0..rows).map(|i| (i * 13 % 400) as i64).collect();
        let names: Vec<String> = place.iter().map(|p| format!("n{p}")).collect();
        let name_refs: Vec<Option<&str>> = names.iter().map(|n| Some(n.as_str())).collect();
        // 0: a name per place (text); 1: the place; 2: a number fixed by either.
        let cols = vec![
            texts(&name_refs),
            ints(&place),
            ints(&place.iter().map(|p| p % 150).collect::<Vec<_>>()),
        ];
        let d = choose(&cols, &[0, 1, 2]);
        let pairs: Vec<(usize, usize)> = d.iter().map(|x| (x.stream, x.determinant)).collect();
        assert_eq!(pairs, vec![(2, 1), (0, 1)]);
        // Without the place, nothing is derived: the name fixes column 2 but is text.
        assert!(choose(&[cols[0].clone(), cols[2].clone()], &[0, 1]).is_empty());
    }

    #[test]
    fn integers_number_alike_through_the_table_and_the_hash_map() {
        let near: Vec<i64> = (0..500).map(|i| 19_790_101 + (i * 7 % 90)).collect();
        let far: Vec<i64> = near.iter().map(|x| x * 1_000_000_007).collect();
        let mut valid = Bitmap::default();
        for i in 0..500 {
            valid.push(i % 11 != 3);
        }
        let with_nulls = |v: &[i64]| Column {
            values: ColumnValues::Int(v.to_vec()),
            validity: Some(valid.clone()),
        };
        let (a, b) = (
            number(&with_nulls(&near), 500).unwrap(),
            number(&with_nulls(&far), 500).unwrap(),
        );
        assert_eq!(a.ids, b.ids);
        assert_eq!(a.first_rows, b.first_rows);
        assert_eq!(a.distinct(), 91);
        assert!(number(&with_nulls(&near), 90).is_none());
    }
}
