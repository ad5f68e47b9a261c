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
//! The writer looks for determinants only among columns whose group has few distinct values
//! (at most a quarter of its rows), so a mapping is always much shorter than the column.

use super::vector::{Bitmap, BytesVec, Column, ColumnValues};
use super::ColumnarError;
use std::collections::HashMap;

/// A column determines others only when it has at most rows / this many distinct values.
const DETERMINANT_SHARE: usize = 4;

/// Groups smaller than this are not worth a search.
const MIN_ROWS: usize = 64;

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

/// Numbers `col`'s distinct values by first appearance; None once there are more than `limit`.
/// Floats are told apart by bit pattern, so a mapping gives back exactly the bits stored.
pub(super) fn number(col: &Column, limit: usize) -> Option<Numbering> {
    let rows = col.len();
    let mut seen: HashMap<Key<'_>, u32, foldhash::fast::RandomState> = HashMap::default();
    let mut ids = Vec::with_capacity(rows);
    let mut first_rows = Vec::new();
    for i in 0..rows {
        let next = first_rows.len() as u32;
        let id = *seen.entry(key(col, i)).or_insert(next);
        if id == next {
            if first_rows.len() >= limit {
                return None;
            }
            first_rows.push(i);
        }
        ids.push(id);
    }
    Some(Numbering { ids, first_rows })
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
/// determinant that is not derived itself. Columns are taken from most to fewest distinct
/// values; each is derived from the determinant with the fewest distinct values that fixes it,
/// or else becomes a determinant. Constant and all-null columns are left alone (their own
/// encoding is a few bytes).
pub(super) fn choose(cols: &[Column], candidates: &[usize]) -> Vec<Derivation> {
    let rows = cols.get(S_ANY).map_or(0, Column::len);
    if rows < MIN_ROWS {
        return Vec::new();
    }
    let limit = rows / DETERMINANT_SHARE;
    let mut numbered: Vec<(usize, Numbering)> = candidates
        .iter()
        .filter_map(|s| {
            let col = cols.get(*s)?;
            let n = number(col, limit)?;
            (col.len() == rows && n.distinct() >= 2).then_some((*s, n))
        })
        .collect();
    numbered.sort_by_key(|(s, n)| (std::cmp::Reverse(n.distinct()), *s));
    // Indexes into `numbered`, in decreasing distinct counts: searched from the end.
    let mut determinants: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for (k, (s, _)) in numbered.iter().enumerate() {
        let Some(b) = cols.get(*s) else { continue };
        let found = determinants
            .iter()
            .rev()
            .copied()
            .find(|d| numbered.get(*d).is_some_and(|(_, a)| is_function_of(a, b)));
        match found.and_then(|d| numbered.get(d)) {
            Some((a, n)) => out.push(Derivation {
                stream: *s,
                determinant: *a,
                first_rows: n.first_rows.clone(),
            }),
            None => determinants.push(k),
        }
    }
    out
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
        let rows = 400;
        let place: Vec<i64> = (0..rows).map(|i| (i * 37 % 50) as i64).collect();
        // 0: place (50 values); 1: lat, a bijection of place; 2: country, 5 values fixed by
        // place; 3: independent noise (400 values); 4: constant; 5: region fixed by country.
        let cols = vec![
            ints(&place),
            ints(&place.iter().map(|p| p * 1000 + 3).collect::<Vec<_>>()),
            ints(&place.iter().map(|p| p % 5).collect::<Vec<_>>()),
            ints(&(0..rows as i64).map(|i| i * 7919 % 401).collect::<Vec<_>>()),
            ints(&vec![42; rows]),
            ints(&place.iter().map(|p| (p % 5) / 2).collect::<Vec<_>>()),
        ];
        let d = choose(&cols, &[0, 1, 2, 3, 4, 5]);
        let pairs: Vec<(usize, usize)> = d.iter().map(|x| (x.stream, x.determinant)).collect();
        // lat and country from place; region is fixed by country too, but country is derived,
        // so region comes from place; noise has too many values, the constant too few.
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
}
