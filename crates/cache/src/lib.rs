//! The page cache, file by file: how much of each file is cached (counts
//! from cachestat(2), page maps from mincore(2)), which byte ranges,
//! evicting and reading files in, and prefetching lists of ranges (seed
//! 001's `mincore` and `treadahead`, complete).
//!
//! - [`scan`]: `iolab cache` — walk paths (in parallel), measure each file,
//!   optionally evict or read it in, render table / ranges / JSON.
//! - [`prefetch`]: `iolab prefetch` — [`prefetch::PrefetchList`] (parse,
//!   print), [`prefetch::run`] with [`prefetch::PrefetchOptions`], giving a
//!   [`prefetch::PrefetchReport`].
//!
//! - [`relayout`]: `iolab relayout` — treadahead `-w`, the files of a list
//!   rewritten in its order (the one module that writes files).
//!
//! Reading files in and evicting them changes no setting (nothing to
//! restore; any read would change the cache too), so it happens here rather
//! than in the guard. Nothing here writes to a file but [`relayout`].
#![deny(missing_docs)]

mod error;
pub mod inspect;
pub mod notes;
pub mod prefetch;
pub mod ranges;
pub mod relayout;
pub mod render;
pub mod scan;
pub mod walk;

pub use error::CacheError;
