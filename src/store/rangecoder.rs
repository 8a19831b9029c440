//! A byte-oriented range coder with static frequency tables (LZMA-style carry handling) and
//! the smoothing that trains them, used by the games' position models (chess and Othello) to
//! store positions in a few bytes each. Every encoded message is independent and ends with a
//! minimal flush; the decoder reads past the end as zero bytes.

/// Frequencies of a table sum to `1 << TOTAL_BITS`.
pub(crate) const TOTAL_BITS: u32 = 15;
pub(crate) const TOTAL: u32 = 1 << TOTAL_BITS;
const TOP: u32 = 1 << 24;

pub(crate) struct Encoder {
    low: u64,
    range: u32,
    cache: u8,
    pending: u64,
    first: bool,
    out: Vec<u8>,
    /// Where this message starts in `out`.
    start: usize,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    #[doc(hidden)]
    pub fn new() -> Encoder {
        Encoder::appending_to(Vec::with_capacity(16))
    }

    /// An encoder whose message is appended to `out` ([`Encoder::finish`] returns it).
    pub(crate) fn appending_to(out: Vec<u8>) -> Encoder {
        Encoder {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending: 1,
            first: true,
            start: out.len(),
            out,
        }
    }

    /// Encodes a symbol occupying `[cum, cum + freq)` of `TOTAL`; `freq > 0`.
    #[inline]
    pub(crate) fn encode(&mut self, cum: u32, freq: u32) {
        debug_assert!(freq > 0 && cum + freq <= TOTAL);
        let r = self.range >> TOTAL_BITS;
        self.low += u64::from(r) * u64::from(cum);
        self.range = r * freq;
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    fn emit(&mut self, b: u8) {
        // The very first byte of an LZMA-style range coder is always zero; it is not stored.
        if self.first {
            self.first = false;
        } else {
            self.out.push(b);
        }
    }

    fn shift_low(&mut self) {
        if (self.low as u32) < 0xFF00_0000 || (self.low >> 32) != 0 {
            let carry = (self.low >> 32) as u8;
            let mut temp = self.cache;
            loop {
                self.emit(temp.wrapping_add(carry));
                temp = 0xFF;
                self.pending -= 1;
                if self.pending == 0 {
                    break;
                }
            }
            self.cache = ((self.low >> 24) & 0xFF) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    /// Ends the message with as few bytes as possible: picks the value in the final interval
    /// with the most trailing zero bits; trailing zero bytes are dropped. Returns the output
    /// (with what it held before, see [`Encoder::appending_to`]).
    pub(crate) fn finish(mut self) -> Vec<u8> {
        // range >= 2^24, so [low, low + range) holds a multiple of 2^24.
        self.low = (self.low + 0xFF_FFFF) & !0xFF_FFFFu64;
        self.shift_low();
        self.shift_low();
        while self.out.len() > self.start && self.out.last() == Some(&0) {
            self.out.pop();
        }
        self.out
    }
}

pub(crate) struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    code: u32,
    range: u32,
}

impl<'a> Decoder<'a> {
    #[doc(hidden)]
    pub fn new(data: &'a [u8]) -> Decoder<'a> {
        let mut d = Decoder {
            data,
            pos: 0,
            code: 0,
            range: u32::MAX,
        };
        for _ in 0..4 {
            d.code = (d.code << 8) | u32::from(d.next_byte());
        }
        d
    }

    #[inline]
    fn next_byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// The cumulative frequency the next symbol falls on; `None` if the data is invalid.
    #[cfg(test)]
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<u32> {
        let r = self.range >> TOTAL_BITS;
        let v = self.code / r;
        (v < TOTAL).then_some(v)
    }

    /// Decodes the next symbol of a cumulative table `cum` (`n` symbols, `cum[n] == TOTAL`),
    /// searching from symbol 0 (the most likely one in skewed tables). Same result as
    /// [`Decoder::peek`] plus a search and [`Decoder::consume`], without the division:
    /// `c <= code / r` is tested as `c * r <= code`.
    #[inline]
    pub(crate) fn decode_symbol(&mut self, cum: &[u16], n: usize) -> Option<usize> {
        let r = u64::from(self.range >> TOTAL_BITS);
        let code = u64::from(self.code);
        if code >= r * u64::from(TOTAL) {
            return None;
        }
        let mut sym = 0;
        while sym + 1 < n && u64::from(*cum.get(sym + 1)?) * r <= code {
            sym += 1;
        }
        let lo = u32::from(*cum.get(sym)?);
        let hi = u32::from(*cum.get(sym + 1)?);
        self.consume(lo, hi.checked_sub(lo)?);
        Some(sym)
    }

    /// [`Decoder::decode_symbol`] for a table of `N - 1` symbols given as a fixed-size array
    /// (`cum[0] == 0`, ascending, `cum[N - 1] == TOTAL`) with the symbol `likely` tried
    /// first: the same result and state on any input. If the code falls in `likely`'s
    /// interval, `r * cum[likely] <= code < r * cum[likely + 1]`, the linear search would stop
    /// there too (the table ascends) and the code is valid (below `r * TOTAL`). The products
    /// fit `u32` (`cum <= TOTAL = 2^15`, `r < 2^17`), and `r * freq` is their difference.
    #[inline(always)]
    pub(crate) fn decode_likely<const N: usize>(
        &mut self,
        cum: &[u16; N],
        likely: usize,
    ) -> Option<usize> {
        if let (Some(&lo), Some(&hi)) = (cum.get(likely), cum.get(likely + 1)) {
            let r = self.range >> TOTAL_BITS;
            let lo = r.wrapping_mul(u32::from(lo));
            let hi = r.wrapping_mul(u32::from(hi));
            if lo <= self.code && self.code < hi {
                self.code -= lo;
                self.range = hi - lo;
                self.normalize();
                return Some(likely);
            }
        }
        self.decode_symbol(cum, N - 1)
    }

    /// Consumes the symbol `[cum, cum + freq)` found via [`Decoder::peek`].
    #[inline]
    pub(crate) fn consume(&mut self, cum: u32, freq: u32) {
        let r = self.range >> TOTAL_BITS;
        self.code = self.code.wrapping_sub(r.wrapping_mul(cum));
        self.range = r.wrapping_mul(freq);
        self.normalize();
    }

    /// Shifts in bytes until the range is at least `TOP` again.
    #[inline(always)]
    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(self.next_byte());
        }
    }
}

/// Weight of one observation relative to the prior (docs/FORMAT.md §6.4).
const OBS_WEIGHT: u64 = 256;
/// The prior counts as this many observations.
const PRIOR_WEIGHT: u64 = 4 * OBS_WEIGHT;

/// Smoothed frequencies: observations plus the prior distribution (docs/FORMAT.md §6.4).
pub(crate) fn smoothed(obs: &[u64], prior: &[u64]) -> Vec<u16> {
    let psum: u64 = prior.iter().sum();
    let w: Vec<u64> = obs
        .iter()
        .zip(prior)
        .map(|(&o, &p)| o * OBS_WEIGHT + (p * PRIOR_WEIGHT).checked_div(psum).unwrap_or(0))
        .collect();
    FreqTable::normalize(&w)
}

/// Appends the cumulative table of `freqs` (`0`, then the running sums) to `out`.
pub(crate) fn push_cum(out: &mut Vec<u16>, freqs: &[u16]) {
    let mut acc = 0u32;
    out.push(0);
    for &f in freqs {
        acc += u32::from(f);
        out.push(acc as u16);
    }
}

/// A static frequency table over `n` symbols with cumulative sums; every frequency is >= 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FreqTable {
    pub(crate) cum: Vec<u16>,
}

impl FreqTable {
    /// Builds a table from frequencies that must sum to `TOTAL` with each >= 1.
    #[cfg(test)]
    pub(crate) fn from_freqs(freqs: &[u16]) -> Option<FreqTable> {
        if freqs.contains(&0) {
            return None;
        }
        let mut cum = Vec::with_capacity(freqs.len() + 1);
        let mut acc = 0u32;
        cum.push(0);
        for &f in freqs {
            acc += u32::from(f);
            if acc > TOTAL {
                return None;
            }
            cum.push(acc as u16);
        }
        (acc == TOTAL).then_some(FreqTable { cum })
    }

    /// Scales counts to frequencies summing to `TOTAL`, every symbol at least 1. Deterministic.
    #[doc(hidden)]
    pub fn normalize(counts: &[u64]) -> Vec<u16> {
        let n = counts.len() as u64;
        assert!(n > 0 && n <= u64::from(TOTAL));
        let sum: u64 = counts.iter().sum();
        let spare = u64::from(TOTAL) - n;
        let mut freqs: Vec<u64> = counts
            .iter()
            .map(|&c| 1 + (c * spare).checked_div(sum).unwrap_or(0))
            .collect();
        // Hand out the rounding remainder to the largest counts (ties: lowest index).
        let mut left = u64::from(TOTAL) - freqs.iter().sum::<u64>();
        let mut order: Vec<usize> = (0..counts.len()).collect();
        order.sort_by(|&a, &b| counts[b].cmp(&counts[a]).then(a.cmp(&b)));
        let mut i = 0;
        while left > 0 {
            freqs[order[i % order.len()]] += 1;
            left -= 1;
            i += 1;
        }
        freqs.into_iter().map(|f| f as u16).collect()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.cum.len() - 1
    }

    #[cfg(test)]
    #[inline]
    pub(crate) fn encode(&self, enc: &mut Encoder, sym: usize) {
        let lo = u32::from(self.cum[sym]);
        let hi = u32::from(self.cum[sym + 1]);
        enc.encode(lo, hi - lo);
    }

    #[inline]
    #[cfg(test)]
    pub(crate) fn decode(&self, dec: &mut Decoder<'_>) -> Option<usize> {
        let v = dec.peek()?;
        let n = self.len();
        let mut sym = 0;
        while sym + 1 < n && u32::from(self.cum[sym + 1]) <= v {
            sym += 1;
        }
        let lo = u32::from(self.cum[sym]);
        let hi = u32::from(self.cum[sym + 1]);
        dec.consume(lo, hi - lo);
        Some(sym)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tables() -> Vec<FreqTable> {
        vec![
            FreqTable::from_freqs(&FreqTable::normalize(&[1000, 1, 1, 5, 0, 0, 30])).unwrap(),
            FreqTable::from_freqs(&FreqTable::normalize(&[1, 1])).unwrap(),
            FreqTable::from_freqs(&FreqTable::normalize(&[0, 1_000_000, 0])).unwrap(),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(syms in proptest::collection::vec((0usize..3, 0usize..7), 0..200)) {
            let t = tables();
            let syms: Vec<(usize, usize)> = syms.into_iter().map(|(ti, s)| (ti, s % t[ti].len())).collect();
            let mut enc = Encoder::new();
            for &(ti, s) in &syms {
                t[ti].encode(&mut enc, s);
            }
            let bytes = enc.finish();
            let mut dec = Decoder::new(&bytes);
            for &(ti, s) in &syms {
                prop_assert_eq!(t[ti].decode(&mut dec), Some(s));
            }
        }

        /// The division-free search decodes exactly what peek + search + consume decode, on
        /// any bytes (valid messages or not).
        #[test]
        fn decode_symbol_equals_reference(
            data in proptest::collection::vec(any::<u8>(), 0..40),
            picks in proptest::collection::vec(0usize..3, 1..100),
        ) {
            let t = tables();
            let (mut a, mut b) = (Decoder::new(&data), Decoder::new(&data));
            for ti in picks {
                let want = t[ti].decode(&mut a);
                let got = b.decode_symbol(&t[ti].cum, t[ti].len());
                prop_assert_eq!(got, want);
                if want.is_none() {
                    break;
                }
                prop_assert_eq!((a.code, a.range, a.pos), (b.code, b.range, b.pos));
            }
        }

        /// Trying the likely symbol first (any symbol, or one out of range) decodes exactly
        /// what the linear search decodes, on any bytes.
        #[test]
        fn decode_likely_equals_decode_symbol(
            data in proptest::collection::vec(any::<u8>(), 0..40),
            picks in proptest::collection::vec((0usize..3, 0usize..8), 1..100),
        ) {
            let t = tables();
            let t0: [u16; 8] = t[0].cum[..].try_into().unwrap();
            let t1: [u16; 3] = t[1].cum[..].try_into().unwrap();
            let t2: [u16; 4] = t[2].cum[..].try_into().unwrap();
            let (mut a, mut b) = (Decoder::new(&data), Decoder::new(&data));
            for (ti, likely) in picks {
                let want = a.decode_symbol(&t[ti].cum, t[ti].len());
                let got = match ti {
                    0 => b.decode_likely(&t0, likely),
                    1 => b.decode_likely(&t1, likely),
                    _ => b.decode_likely(&t2, likely),
                };
                prop_assert_eq!(got, want);
                if want.is_none() {
                    break;
                }
                prop_assert_eq!((a.code, a.range, a.pos), (b.code, b.range, b.pos));
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let t = tables();
            let mut dec = Decoder::new(&data);
            for i in 0..100 {
                if t[i % 3].decode(&mut dec).is_none() { break; }
            }
        }

        #[test]
        fn normalize_sums(counts in proptest::collection::vec(0u64..1_000_000_000, 1..40)) {
            let f = FreqTable::normalize(&counts);
            prop_assert_eq!(f.iter().map(|&x| u32::from(x)).sum::<u32>(), TOTAL);
            prop_assert!(f.iter().all(|&x| x >= 1));
        }
    }

    #[test]
    fn skewed_symbols_cost_little() {
        let t = FreqTable::from_freqs(&FreqTable::normalize(&[1_000_000, 1])).unwrap();
        let mut enc = Encoder::new();
        for _ in 0..64 {
            t.encode(&mut enc, 0);
        }
        assert!(enc.finish().len() <= 2);
    }
}
