//! Caller bugs panic with a message: out-of-range, wrapping and misaligned accesses.

use super::*;

#[test]
#[should_panic(expected = "outside the region")]
fn write_out_of_range_panics() {
    Region::anonymous(100).write(90, &[0; 11]);
}

#[test]
#[should_panic(expected = "outside the region")]
fn huge_offset_does_not_wrap() {
    Region::anonymous(100).read(usize::MAX, &mut [0; 2]);
}

#[test]
#[should_panic(expected = "outside the region")]
fn flush_out_of_range_panics() {
    let dir = scratch();
    let (_, r) = region_file(dir.path(), "f.rgn", 128, adr());
    r.flush(64, 65);
}

#[test]
#[should_panic(expected = "not a multiple of 8")]
fn misaligned_atomic_panics() {
    Region::anonymous(64).load_u64(4);
}

#[test]
#[should_panic(expected = "outside the region")]
fn atomic_past_the_end_panics() {
    Region::anonymous(64).store_u64(64, 1);
}

#[test]
#[should_panic(expected = "outside the region")]
fn word_straddling_a_ragged_end_panics() {
    // 100 bytes: the word at 96 would end at 104.
    Region::anonymous(100).load_u64(96);
}

#[test]
#[should_panic(expected = "outside the region")]
fn flush_lines_out_of_range_panics() {
    let dir = scratch();
    let (_, r) = region_file(dir.path(), "f.rgn", 128, adr());
    r.flush_lines(&[0, 128]);
}

#[test]
#[should_panic(expected = "not a multiple of 8")]
fn misaligned_word_view_panics() {
    Region::anonymous(64).words(4, 1);
}

#[test]
#[should_panic(expected = "outside the region")]
fn word_view_past_a_ragged_end_panics() {
    // 100 bytes: 12 whole words; a view of 3 words from 80 would end at 104.
    let r = Region::anonymous(100);
    assert_eq!(r.words(80, 2).len(), 2);
    r.words(80, 3);
}

#[test]
#[should_panic(expected = "outside the region")]
fn word_view_of_a_huge_count_does_not_wrap() {
    Region::anonymous(64).words(8, usize::MAX / 4);
}

#[test]
#[should_panic]
fn word_view_index_past_its_length_panics() {
    Region::anonymous(64).words(0, 2).get(2);
}

#[test]
#[should_panic(expected = "outside the region")]
fn word_stores_past_the_end_panic() {
    Region::anonymous(64).store_words(56, &[1, 2]);
}
