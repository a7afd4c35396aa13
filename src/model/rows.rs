//! [`Rows`]: a report list that one build shares with the next.

use std::fmt;
use std::ops::Index;

use serde::{Serialize, Serializer};

/// The most rows [`Rows::splice`] moves one by one rather than join two
/// trees.
const ROWS_MOVED_ONE_BY_ONE: usize = 256;

/// A list in a [`BuildResult`](crate::BuildResult) (one decision per chunk,
/// the ids left out, the truncations) that a session carries over from one
/// turn to the next instead of rebuilding it.
///
/// A turn of a long session changes a few rows of a report that names
/// every chunk: the list is a persistent vector (`imbl`'s RRB tree), so a
/// copy costs O(1), and appending or replacing a row O(log n) whatever the
/// session's length; a session's report and the caller's share their rows.
/// It reads like a slice: [`iter`](Rows::iter), [`len`](Rows::len),
/// indexing, [`to_vec`](Rows::to_vec); it serializes as a JSON array.
#[derive(Clone, PartialEq, Eq)]
pub struct Rows<T: Clone>(imbl::Vector<T>);

impl<T: Clone> Rows<T> {
    /// An empty list.
    pub fn new() -> Self {
        Rows(imbl::Vector::new())
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The row at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&T> {
        self.0.get(index)
    }

    /// The first row.
    pub fn first(&self) -> Option<&T> {
        self.0.front()
    }

    /// The last row.
    pub fn last(&self) -> Option<&T> {
        self.0.back()
    }

    /// The rows in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator + '_ {
        RowsIter::new(&self.0)
    }

    /// The rows from `index` on (none when it is past the end). The first
    /// is found down the tree, not by stepping over the leaves before it,
    /// then each row is read through the leaf it falls in: for a scan
    /// that starts far in and stops soon.
    pub(crate) fn iter_from(&self, index: usize) -> impl Iterator<Item = &T> + '_ {
        let start = index.min(self.0.len());
        self.0.focus().narrow(start..).into_iter()
    }

    /// The rows copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<T> {
        self.0.iter().cloned().collect()
    }

    /// Whether some row equals `value`.
    pub fn contains<U>(&self, value: &U) -> bool
    where
        T: PartialEq<U>,
        U: ?Sized,
    {
        self.0.iter().any(|row| row == value)
    }

    /// The first `count` rows (all when there are fewer).
    pub fn take(&self, count: usize) -> Rows<T> {
        let mut rows = self.0.clone();
        if count < rows.len() {
            rows.truncate(count);
        }
        Rows(rows)
    }

    /// Whether the list starts with the rows of `prefix`.
    pub fn starts_with(&self, prefix: &Rows<T>) -> bool
    where
        T: PartialEq,
    {
        self.len() >= prefix.len() && self.iter().zip(prefix).all(|(row, p)| row == p)
    }

    /// A mutable reference to the last row.
    pub(crate) fn last_mut(&mut self) -> Option<&mut T> {
        self.0.back_mut()
    }

    /// Appends a row.
    pub(crate) fn push(&mut self, row: T) {
        self.0.push_back(row);
    }

    /// Replaces the row at `index` (which must exist).
    pub(crate) fn set(&mut self, index: usize, row: T) {
        self.0.set(index, row);
    }

    /// Replaces the rows of each range of `edits` (ascending, apart, and
    /// existing) by its rows. Rows set in place cost a path of the tree
    /// a leaf; splitting and joining the tree costs far more, so the ranges
    /// whose length changes are written in stretches: ranges apart by at
    /// most [`ROWS_MOVED_ONE_BY_ONE`] rows in one, with the rows between
    /// them moved one by one, and stretches further apart each on its own,
    /// so that a trim that writes at both ends of a long prompt does not
    /// move every row between.
    pub(crate) fn splice(&mut self, edits: Vec<(std::ops::RangeInclusive<usize>, Vec<T>)>) {
        let mut changed: Vec<Change<T>> = Vec::new();
        // A focus keeps the leaf it last wrote: rows set in order walk the
        // tree once a leaf.
        let mut focus = self.0.focus_mut();
        for (range, rows) in edits {
            let (start, end) = (*range.start(), range.end() + 1);
            if rows.len() == end - start {
                for (at, row) in (start..end).zip(rows) {
                    let old = focus.set(at, row);
                    debug_assert!(old.is_some(), "a row set past the end");
                }
            } else {
                changed.push((start, end, rows));
            }
        }
        drop(focus);
        // From the last stretch, so that the places of those before it
        // hold.
        while let Some(stretch) = last_stretch(&mut changed) {
            self.splice_stretch(stretch);
        }
    }

    /// Replaces the rows of each range of `changed` (`start..end`,
    /// ascending, apart, not empty) by its rows, moving those between them.
    fn splice_stretch(&mut self, changed: Vec<Change<T>>) {
        let (Some(&(first, ..)), Some(&(_, last, _))) = (changed.first(), changed.last()) else {
            return;
        };
        let mut rest = self.0.split_off(first);
        let tail = rest.split_off(last - first);
        let mut old = RowsIter::new(&rest);
        let mut at = first;
        for (start, end, rows) in changed {
            self.0.extend(old.by_ref().take(start - at).cloned());
            self.0.extend(rows);
            old.nth(end - start - 1);
            at = end;
        }
        // Joining two trees rebalances them, which costs more than moving
        // a few hundred rows one by one onto the larger.
        let (head, mut tail) = (std::mem::take(&mut self.0), tail);
        self.0 = match (head.len(), tail.len()) {
            (h, t) if h <= t && h <= ROWS_MOVED_ONE_BY_ONE => {
                head.into_iter().rev().for_each(|row| tail.push_front(row));
                tail
            }
            (_, t) if t <= ROWS_MOVED_ONE_BY_ONE => {
                let mut head = head;
                head.extend(tail);
                head
            }
            _ => {
                let mut head = head;
                head.append(tail);
                head
            }
        };
    }
}

/// A range of rows, `start..end`, and the rows that replace it.
type Change<T> = (usize, usize, Vec<T>);

/// Takes the last stretch of `changed` (ascending): the ranges after the
/// last gap of more than [`ROWS_MOVED_ONE_BY_ONE`] rows.
fn last_stretch<T>(changed: &mut Vec<Change<T>>) -> Option<Vec<Change<T>>> {
    let mut from = changed.len().checked_sub(1)?;
    while from > 0 && changed[from].0 - changed[from - 1].1 <= ROWS_MOVED_ONE_BY_ONE {
        from -= 1;
    }
    Some(changed.split_off(from))
}

impl<T: Clone> Default for Rows<T> {
    fn default() -> Self {
        Rows::new()
    }
}

impl<T: Clone> Index<usize> for Rows<T> {
    type Output = T;

    /// # Panics
    ///
    /// When `index` is out of bounds, as a slice does.
    fn index(&self, index: usize) -> &T {
        &self.0[index]
    }
}

impl<T: Clone> FromIterator<T> for Rows<T> {
    fn from_iter<I: IntoIterator<Item = T>>(rows: I) -> Self {
        Rows(rows.into_iter().collect())
    }
}

impl<T: Clone> From<Vec<T>> for Rows<T> {
    fn from(rows: Vec<T>) -> Self {
        rows.into_iter().collect()
    }
}

/// The iterators of a [`Rows`]: types a caller iterates and never needs to
/// name, so they sit in a module of their own, out of the API.
mod iter {
    use std::fmt;

    type Leaves<'a, T> = imbl::vector::Chunks<'a, T, imbl::shared_ptr::DefaultSharedPtr>;

    /// The rows of a [`Rows`](super::Rows), by reference, in order: a leaf
    /// of the tree at a time, at a slice's speed (the tree's own iterator
    /// looks each row up, which made every scan of a long report cost
    /// several times what it reads).
    pub struct RowsIter<'a, T: Clone> {
        leaves: Leaves<'a, T>,
        front: std::slice::Iter<'a, T>,
        back: std::slice::Iter<'a, T>,
        left: usize,
    }

    impl<'a, T: Clone> RowsIter<'a, T> {
        pub(super) fn new(rows: &'a imbl::Vector<T>) -> Self {
            RowsIter {
                leaves: rows.leaves(),
                front: [].iter(),
                back: [].iter(),
                left: rows.len(),
            }
        }
    }

    impl<'a, T: Clone> Iterator for RowsIter<'a, T> {
        type Item = &'a T;

        fn next(&mut self) -> Option<&'a T> {
            let row = loop {
                if let Some(row) = self.front.next() {
                    break row;
                }
                match self.leaves.next() {
                    Some(leaf) => self.front = leaf.iter(),
                    None => break self.back.next()?,
                }
            };
            self.left -= 1;
            Some(row)
        }

        fn size_hint(&self) -> (usize, Option<usize>) {
            (self.left, Some(self.left))
        }

        /// Skips whole leaves: `skip(n)` costs n / 64 steps, not n.
        fn nth(&mut self, mut n: usize) -> Option<&'a T> {
            while n >= self.front.len() {
                n -= self.front.len();
                self.left -= self.front.len();
                self.front = match self.leaves.next() {
                    Some(leaf) => leaf.iter(),
                    // Only what the back took is left.
                    None => std::mem::replace(&mut self.back, [].iter()),
                };
                if self.front.len() == 0 {
                    return None;
                }
            }
            self.left -= n + 1;
            self.front.nth(n)
        }
    }

    impl<T: Clone> DoubleEndedIterator for RowsIter<'_, T> {
        fn next_back(&mut self) -> Option<Self::Item> {
            let row = loop {
                if let Some(row) = self.back.next_back() {
                    break row;
                }
                match self.leaves.next_back() {
                    Some(leaf) => self.back = leaf.iter(),
                    None => break self.front.next_back()?,
                }
            };
            self.left -= 1;
            Some(row)
        }
    }

    impl<T: Clone> ExactSizeIterator for RowsIter<'_, T> {}

    impl<T: Clone> std::iter::FusedIterator for RowsIter<'_, T> {}

    impl<T: Clone + fmt::Debug> fmt::Debug for RowsIter<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("RowsIter")
                .field("remaining", &self.left)
                .finish()
        }
    }

    /// The rows of a [`Rows`](super::Rows), by value, in order.
    pub struct RowsIntoIter<T: Clone>(
        pub(super) imbl::vector::ConsumingIter<T, imbl::shared_ptr::DefaultSharedPtr>,
    );

    // The consuming iterator passes every call on to the persistent
    // vector's own.
    impl<T: Clone> Iterator for RowsIntoIter<T> {
        type Item = T;

        fn next(&mut self) -> Option<T> {
            self.0.next()
        }

        fn size_hint(&self) -> (usize, Option<usize>) {
            self.0.size_hint()
        }
    }

    impl<T: Clone> DoubleEndedIterator for RowsIntoIter<T> {
        fn next_back(&mut self) -> Option<T> {
            self.0.next_back()
        }
    }

    impl<T: Clone> ExactSizeIterator for RowsIntoIter<T> {}

    impl<T: Clone> std::iter::FusedIterator for RowsIntoIter<T> {}

    impl<T: Clone + fmt::Debug> fmt::Debug for RowsIntoIter<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            (f.debug_struct("RowsIntoIter"))
                .field("remaining", &self.0.len())
                .finish()
        }
    }
}

use iter::{RowsIntoIter, RowsIter};

impl<'a, T: Clone> IntoIterator for &'a Rows<T> {
    type Item = &'a T;
    type IntoIter = RowsIter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        RowsIter::new(&self.0)
    }
}

impl<T: Clone> IntoIterator for Rows<T> {
    type Item = T;
    type IntoIter = RowsIntoIter<T>;

    /// The rows, each cloned unless this list alone held it.
    fn into_iter(self) -> Self::IntoIter {
        RowsIntoIter(self.0.into_iter())
    }
}

impl<T: Clone + PartialEq<U>, U> PartialEq<[U]> for Rows<T> {
    fn eq(&self, other: &[U]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b)
    }
}

impl<T: Clone + PartialEq<U>, U> PartialEq<Vec<U>> for Rows<T> {
    fn eq(&self, other: &Vec<U>) -> bool {
        *self == **other
    }
}

impl<T: Clone + PartialEq<U>, U, const N: usize> PartialEq<[U; N]> for Rows<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        *self == other[..]
    }
}

impl<T: Clone + fmt::Debug> fmt::Debug for Rows<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Clone + Serialize> Serialize for Rows<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_keeps_its_rows_when_the_original_changes() {
        let mut rows: Rows<u32> = (0..1000).collect();
        let copy = rows.clone();
        rows.set(500, 7);
        rows.push(1000);
        assert_eq!(copy.len(), 1000);
        assert_eq!(copy[500], 500);
        assert_eq!((rows.len(), rows[500], rows[1000]), (1001, 7, 1000));
        assert_eq!(
            serde_json::to_string(&copy.iter().take(3).collect::<Vec<_>>()).unwrap(),
            "[0,1,2]"
        );
        assert_eq!(
            serde_json::to_string(&Rows::from(vec![1, 2])).unwrap(),
            "[1,2]"
        );
    }

    #[test]
    fn rows_from_an_index_are_the_rows_a_vec_has_from_it() {
        // A tree of several levels, built by pushes and by a join, so that
        // its leaves are not all full.
        let mut rows: Rows<usize> = (0..3000).collect();
        rows.splice(vec![(100..=130, vec![7; 5]), (2000..=2000, vec![8; 70])]);
        let vec = rows.to_vec();
        for index in [
            0,
            1,
            63,
            64,
            65,
            100,
            1500,
            2000,
            vec.len() - 1,
            vec.len(),
            9999,
        ] {
            let from: Vec<usize> = rows.iter_from(index).copied().collect();
            assert_eq!(from, vec.get(index..).unwrap_or_default(), "from {index}");
        }
    }

    #[test]
    fn rows_splice_as_a_vec_does_wherever_the_ranges_fall() {
        // Ranges near either end (rows moved one by one onto the larger
        // side) and in the middle (two trees joined), growing, shrinking
        // and keeping their length; ranges close enough to be written in
        // one stretch (256 rows apart) and ranges each written on its own
        // (257 rows apart, and further).
        let cases: [&[(usize, usize, usize)]; 7] = [
            &[(3, 5, 1)],
            &[(1990, 1995, 9)],
            &[(900, 902, 0), (950, 950, 4)],
            &[(10, 11, 2), (500, 503, 4), (1800, 1800, 0)],
            &[(0, 0, 3), (1999, 1999, 1)],
            &[(100, 101, 0), (358, 358, 2), (615, 620, 1), (878, 878, 3)],
            &[(1, 52, 1), (60, 60, 0), (1263, 1465, 72)],
        ];
        for edits in cases {
            let mut rows: Rows<u32> = (0..2000).collect();
            let mut expected: Vec<u32> = (0..2000).collect();
            let mut spliced = Vec::new();
            for (k, &(start, end, len)) in edits.iter().enumerate() {
                let new: Vec<u32> = (0..len as u32)
                    .map(|n| 10_000 * (k as u32 + 1) + n)
                    .collect();
                spliced.push((start..=end, new));
            }
            for (range, new) in spliced.iter().rev() {
                expected.splice(range.clone(), new.iter().copied());
            }
            rows.splice(spliced);
            assert_eq!(rows.to_vec(), expected, "{edits:?}");
            assert!(rows.iter().eq(expected.iter()), "{edits:?}");
        }
    }

    #[test]
    fn rows_iterate_as_a_slice_does_from_either_end() {
        let mut rows: Rows<u32> = (0..700).collect();
        for row in 700..1500 {
            rows.push(row);
        }
        rows.set(3, 9);
        let slice = rows.to_vec();
        assert!(rows.iter().eq(slice.iter()));
        assert!(rows.iter().rev().eq(slice.iter().rev()));
        // Taking from both ends meets in the middle, whatever leaf that is.
        for split in [0, 1, 63, 64, 65, 700, 1499, 1500] {
            let mut iter = rows.iter();
            let front: Vec<&u32> = iter.by_ref().take(split).collect();
            let back: Vec<&u32> = iter.by_ref().rev().collect();
            assert_eq!(front.len() + back.len(), 1500, "split {split}");
            assert!(
                front
                    .into_iter()
                    .chain(back.into_iter().rev())
                    .eq(slice.iter())
            );
        }
        for skip in [0, 1, 63, 64, 65, 700, 1499, 1500, 1501] {
            assert!(
                rows.iter().skip(skip).eq(slice.iter().skip(skip)),
                "skip {skip}"
            );
            let mut iter = rows.iter();
            let back: Vec<&u32> = iter.by_ref().rev().take(100).collect();
            assert_eq!(
                iter.nth(skip),
                slice[..1400].get(skip),
                "nth {skip} after the back"
            );
            assert_eq!(iter.len(), 1400usize.saturating_sub(skip + 1));
            assert_eq!(back.len(), 100);
        }
        let mut iter = rows.iter();
        for left in (0..1500).rev() {
            let row = if left % 2 == 0 {
                iter.next()
            } else {
                iter.next_back()
            };
            assert!(row.is_some());
            assert_eq!(iter.len(), left);
        }
        assert_eq!((iter.next(), iter.next_back()), (None, None));
    }
}
