//! Bit-level coding shared by the packed chunk formats (id index chunks, §15.5; reference
//! chunks, §15.4): bits written most significant first, Rice and Elias-gamma codes, and a
//! reader that refuses to read past its bytes instead of panicking.

/// A read past the end of the bits, or a code too long to be one this build writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitsError(pub &'static str);

/// Bits written most significant first.
#[derive(Default)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    pub fn with_capacity(bytes: usize) -> BitWriter {
        BitWriter {
            out: Vec::with_capacity(bytes),
            acc: 0,
            n: 0,
        }
    }

    /// Writes the low `bits` bits of `value` (up to 64).
    pub fn put(&mut self, value: u64, bits: u32) {
        // At most 32 bits at a time keep the accumulator below 64 bits.
        if bits > 32 {
            self.put(value >> 32, bits - 32);
            self.put(value & 0xffff_ffff, 32);
            return;
        }
        if bits == 0 {
            return;
        }
        self.acc = (self.acc << bits) | (value & ((1u64 << bits) - 1));
        self.n += bits;
        while self.n >= 8 {
            self.n -= 8;
            self.out.push((self.acc >> self.n) as u8);
        }
        self.acc &= (1u64 << self.n) - 1;
    }

    /// `q` one bits and a zero (a unary number).
    pub fn unary(&mut self, q: u64) {
        let mut ones = q;
        while ones > 0 {
            let k = ones.min(32);
            self.put(u64::MAX, k as u32);
            ones -= k;
        }
        self.put(0, 1);
    }

    /// `v` Rice-coded with parameter `k`: the quotient `v >> k` in unary, then the low `k` bits.
    pub fn rice(&mut self, v: u64, k: u32) {
        self.unary(v >> k);
        self.put(v, k);
    }

    /// `v ≥ 1` in Elias gamma: as many zeros as `v` has bits after its leading one, then `v`.
    pub fn gamma(&mut self, v: u64) {
        debug_assert!(v >= 1);
        let bits = 64 - v.leading_zeros();
        self.put(0, bits - 1);
        self.put(v, bits);
    }

    /// Bits written so far.
    pub fn bit_len(&self) -> usize {
        self.out.len() * 8 + self.n as usize
    }

    /// The bytes, the last one padded with zero bits.
    pub fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push((self.acc << (8 - self.n)) as u8);
        }
        self.out
    }
}

/// Bits read most significant first; reading past the end is an error.
pub struct BitReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> BitReader<'a> {
    pub fn new(bytes: &'a [u8]) -> BitReader<'a> {
        BitReader { bytes, at: 0 }
    }

    /// The 64 bits from the read position on, most significant first (zeros past the end),
    /// and how many of them are bits of the input (at least 57 unless the input ends first).
    #[inline]
    fn window(&self) -> (u64, u32) {
        let byte = self.at / 8;
        let mut buf = [0u8; 8];
        if let Some(rest) = self.bytes.get(byte..) {
            let n = rest.len().min(8);
            buf[..n].copy_from_slice(&rest[..n]);
        }
        let shift = (self.at % 8) as u32;
        let valid = (64 - shift).min(u32::try_from(self.left()).unwrap_or(u32::MAX));
        (u64::from_be_bytes(buf) << shift, valid)
    }

    pub fn bit(&mut self) -> Result<u64, BitsError> {
        let byte = self
            .bytes
            .get(self.at / 8)
            .ok_or(BitsError("bits past the end"))?;
        let b = (byte >> (7 - self.at % 8)) & 1;
        self.at += 1;
        Ok(u64::from(b))
    }

    /// `bits` bits (up to 64) as a number.
    #[inline]
    pub fn get(&mut self, bits: u32) -> Result<u64, BitsError> {
        if bits > 64 {
            return Err(BitsError("field wider than 64 bits"));
        }
        if self.left() < bits as usize {
            return Err(BitsError("bits past the end"));
        }
        if bits == 0 {
            return Ok(0);
        }
        if bits > 56 {
            let hi = self.get(bits - 32)?;
            return Ok(hi << 32 | self.get(32)?);
        }
        let (w, _) = self.window();
        self.at += bits as usize;
        Ok(w >> (64 - bits))
    }

    /// A unary number (ones up to a zero), refused past `max`.
    #[inline]
    pub fn unary(&mut self, max: u64) -> Result<u64, BitsError> {
        let mut q = 0u64;
        loop {
            let (w, valid) = self.window();
            if valid == 0 {
                return Err(BitsError("bits past the end"));
            }
            let ones = (!w).leading_zeros().min(valid);
            q += u64::from(ones);
            if q > max {
                return Err(BitsError("unary code too long"));
            }
            if ones < valid {
                self.at += ones as usize + 1;
                return Ok(q);
            }
            self.at += ones as usize;
        }
    }

    /// A Rice-coded number with parameter `k` (see [`BitWriter::rice`]).
    #[inline]
    pub fn rice(&mut self, k: u32) -> Result<u64, BitsError> {
        if k > 62 {
            return Err(BitsError("Rice parameter out of range"));
        }
        let q = self.unary(u64::MAX >> k)?;
        Ok((q << k) | self.get(k)?)
    }

    /// An Elias-gamma code (a value ≥ 1 of at most 64 bits).
    #[inline]
    pub fn gamma(&mut self) -> Result<u64, BitsError> {
        let (w, valid) = self.window();
        let zeros = w.leading_zeros();
        if zeros < valid {
            // The leading one is within the window.
            self.at += zeros as usize + 1;
            return Ok((1u64 << zeros) | self.get(zeros)?);
        }
        let zeros = {
            let mut z = 0u32;
            while self.bit()? == 0 {
                z += 1;
                if z > 63 {
                    return Err(BitsError("gamma code too long"));
                }
            }
            z
        };
        Ok((1u64 << zeros) | self.get(zeros)?)
    }

    /// The remaining bits.
    pub fn left(&self) -> usize {
        (self.bytes.len() * 8).saturating_sub(self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reader one bit at a time (what [`BitReader`] did before it read words): the
    /// reference its answers and errors are compared with.
    struct Slow<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl Slow<'_> {
        fn left(&self) -> usize {
            (self.bytes.len() * 8).saturating_sub(self.at)
        }
        fn bit(&mut self) -> Result<u64, BitsError> {
            let byte = self
                .bytes
                .get(self.at / 8)
                .ok_or(BitsError("bits past the end"))?;
            let b = (byte >> (7 - self.at % 8)) & 1;
            self.at += 1;
            Ok(u64::from(b))
        }
        fn get(&mut self, bits: u32) -> Result<u64, BitsError> {
            if bits > 64 {
                return Err(BitsError("field wider than 64 bits"));
            }
            if self.left() < bits as usize {
                return Err(BitsError("bits past the end"));
            }
            let mut v = 0;
            for _ in 0..bits {
                v = (v << 1) | self.bit()?;
            }
            Ok(v)
        }
        fn unary(&mut self, max: u64) -> Result<u64, BitsError> {
            let mut q = 0u64;
            while self.bit()? == 1 {
                q += 1;
                if q > max {
                    return Err(BitsError("unary code too long"));
                }
            }
            Ok(q)
        }
        fn rice(&mut self, k: u32) -> Result<u64, BitsError> {
            if k > 62 {
                return Err(BitsError("Rice parameter out of range"));
            }
            let q = self.unary(u64::MAX >> k)?;
            Ok((q << k) | self.get(k)?)
        }
        fn gamma(&mut self) -> Result<u64, BitsError> {
            let mut z = 0u32;
            while self.bit()? == 0 {
                z += 1;
                if z > 63 {
                    return Err(BitsError("gamma code too long"));
                }
            }
            Ok((1u64 << z) | self.get(z)?)
        }
    }

    /// One read: 0 a bit, 1 `get(k)`, 2 `unary(k)`, 3 `rice(k)`, 4 `gamma()`.
    fn step(op: u8, k: u32, fast: &mut BitReader, slow: &mut Slow) -> (String, String) {
        let (a, b) = match op % 5 {
            0 => (fast.bit(), slow.bit()),
            1 => (fast.get(k), slow.get(k)),
            2 => (fast.unary(u64::from(k)), slow.unary(u64::from(k))),
            3 => (fast.rice(k), slow.rice(k)),
            _ => (fast.gamma(), slow.gamma()),
        };
        // Where a reader stands after an error is not part of its answer (callers stop).
        let at = |r: &Result<u64, BitsError>, left: usize| match r {
            Ok(_) => format!("{r:?} {left}"),
            Err(_) => format!("{r:?}"),
        };
        (at(&a, fast.left()), at(&b, slow.left()))
    }

    proptest! {
        #[test]
        fn codes_round_trip(vals in proptest::collection::vec((any::<u64>(), 0u32..=64, 0u32..=20), 0..50)) {
            let mut w = BitWriter::default();
            for &(v, bits, k) in &vals {
                let small = v >> 44;
                w.put(v, bits);
                w.rice(small, k);
                w.gamma(v.max(1));
            }
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            for &(v, bits, k) in &vals {
                let want = if bits == 64 { v } else { v & ((1u64 << bits) - 1) };
                prop_assert_eq!(r.get(bits).unwrap(), want);
                prop_assert_eq!(r.rice(k).unwrap(), v >> 44);
                prop_assert_eq!(r.gamma().unwrap(), v.max(1));
            }
            prop_assert!(r.left() < 8);
        }

        #[test]
        fn words_read_as_bits_do(
            bytes in proptest::collection::vec(prop_oneof![Just(0u8), Just(0xffu8), any::<u8>()], 0..40),
            ops in proptest::collection::vec((any::<u8>(), 0u32..=70), 0..60),
        ) {
            let mut fast = BitReader::new(&bytes);
            let mut slow = Slow { bytes: &bytes, at: 0 };
            for &(op, k) in &ops {
                let (a, b) = step(op, k, &mut fast, &mut slow);
                prop_assert_eq!(&a, &b, "op {} k {}", op % 5, k);
                if a.starts_with("Err") {
                    // After an error the two readers may stand at different bits.
                    break;
                }
            }
        }

        #[test]
        fn any_bytes_read_or_fail_without_panic(b in proptest::collection::vec(any::<u8>(), 0..16), k in 0u32..70) {
            let mut r = BitReader::new(&b);
            for _ in 0..8 {
                let _ = r.gamma();
                let _ = r.rice(k);
                let _ = r.get(k);
            }
        }
    }
}
