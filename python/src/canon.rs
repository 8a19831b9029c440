//! The canonical tagged encoding of the Python values a transposition table keeps: the state
//! keys easyAI's `ttentry()` returns and the entries it stores (numbers, strings, tuples,
//! lists, dicts, None). Never pickle: only these types encode. As a key, values Python holds
//! equal encode to equal bytes (`1`, `1.0` and `True` are one dict key, so one state; a
//! dict's items are sorted by their encoded keys); as a value, decoding rebuilds exactly the
//! types, values and dict order encoded.
//!
//! A value is a tag byte, then: nothing (None, False, True); a zigzag LEB128 varint (an int
//! of 64 bits); a sign byte, a varint length and big-endian magnitude (a larger int); 8 bytes
//! big-endian IEEE 754 (a float, NaN as one NaN); a varint length and the bytes (str as UTF-8,
//! bytes); a varint count and the items (tuple, list; a dict's key and value pairs).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

const NONE: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const BIGINT: u8 = 4;
const FLOAT: u8 = 5;
const STR: u8 = 6;
const BYTES: u8 = 7;
const TUPLE: u8 = 8;
const LIST: u8 = 9;
const DICT: u8 = 10;

/// Deepest nesting encoded or decoded (a cyclic list would recurse forever).
const MAX_DEPTH: usize = 200;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The encoding of `v`: as a key (`key`: values Python holds equal encode alike) or as a
/// value (types kept).
pub fn encode(v: &Bound<'_, PyAny>, key: bool) -> PyResult<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    Encoder { key }.encode_into(v, &mut out, 0)?;
    Ok(out)
}

struct Encoder {
    key: bool,
}

impl Encoder {
    fn encode_into(&self, v: &Bound<'_, PyAny>, out: &mut Vec<u8>, depth: usize) -> PyResult<()> {
        if depth > MAX_DEPTH {
            return Err(PyValueError::new_err(format!(
                "a value nested more than {MAX_DEPTH} deep (a cycle?) cannot be stored"
            )));
        }
        if v.is_none() {
            out.push(NONE);
        } else if let Ok(b) = v.cast::<PyBool>() {
            if self.key {
                // As Python compares them, True == 1 and False == 0: one key each.
                out.push(INT);
                put_varint(out, zigzag(i64::from(b.is_true())));
            } else {
                out.push(if b.is_true() { TRUE } else { FALSE });
            }
        } else if let Ok(s) = v.cast::<PyString>() {
            let s = s.to_cow()?;
            out.push(STR);
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        } else if let Ok(f) = v.cast::<PyFloat>() {
            let x = f.value();
            // An integral float equals its int in Python (1.0 == 1): encoded as the int, so the
            // same key either way; decoding gives the int.
            if self.key && x.fract() == 0.0 && x.abs() < 9.0e15 {
                out.push(INT);
                put_varint(out, zigzag(x as i64));
            } else {
                out.push(FLOAT);
                let bits = if x.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    x.to_bits()
                };
                out.extend_from_slice(&bits.to_be_bytes());
            }
        } else if let Ok(i) = v.cast::<PyInt>() {
            encode_int(i.as_any(), out)?;
        } else if let Ok(b) = v.cast::<PyBytes>() {
            out.push(BYTES);
            put_varint(out, b.as_bytes().len() as u64);
            out.extend_from_slice(b.as_bytes());
        } else if let Ok(t) = v.cast::<PyTuple>() {
            out.push(TUPLE);
            put_varint(out, t.len() as u64);
            for item in t.iter() {
                self.encode_into(&item, out, depth + 1)?;
            }
        } else if let Ok(l) = v.cast::<PyList>() {
            out.push(LIST);
            put_varint(out, l.len() as u64);
            for item in l.iter() {
                self.encode_into(&item, out, depth + 1)?;
            }
        } else if let Ok(d) = v.cast::<PyDict>() {
            let mut items = Vec::with_capacity(d.len());
            for (k, val) in d.iter() {
                let mut kb = Vec::new();
                self.encode_into(&k, &mut kb, depth + 1)?;
                let mut vb = Vec::new();
                self.encode_into(&val, &mut vb, depth + 1)?;
                items.push((kb, vb));
            }
            if self.key {
                items.sort();
            }
            out.push(DICT);
            put_varint(out, items.len() as u64);
            for (k, val) in items {
                out.extend_from_slice(&k);
                out.extend_from_slice(&val);
            }
        } else if v.hasattr("tolist")? && v.hasattr("dtype")? {
            // numpy: an array (a board) as its nested lists, a scalar as its Python number.
            self.encode_into(&v.call_method0("tolist")?, out, depth + 1)?;
        } else if v.hasattr("__index__")? {
            // Other int-likes: their int.
            let i = v.call_method0("__index__")?;
            encode_int(&i, out)?;
        } else {
            return Err(PyTypeError::new_err(format!(
                "{} cannot be stored in a transposition table (None, bool, int, float, str, \
             bytes, tuple, list and dict can; nothing is pickled)",
                v.get_type().name()?
            )));
        }
        Ok(())
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn encode_int(i: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if let Ok(small) = i.extract::<i64>() {
        out.push(INT);
        put_varint(out, zigzag(small));
        return Ok(());
    }
    let negative = i.lt(0)?;
    let magnitude = if negative { i.neg()? } else { i.clone() };
    let bits: usize = magnitude.call_method0("bit_length")?.extract()?;
    let len = bits.div_ceil(8);
    let bytes = magnitude.call_method1("to_bytes", (len, "big"))?;
    let bytes = bytes.cast::<PyBytes>()?.as_bytes();
    out.push(BIGINT);
    out.push(u8::from(negative));
    put_varint(out, len as u64);
    out.extend_from_slice(bytes);
    Ok(())
}

/// The value `bytes` encodes (the whole of them).
pub fn decode<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let mut at = 0;
    let v = decode_at(py, bytes, &mut at, 0)?;
    if at != bytes.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(v)
}

fn bad(what: &str) -> PyErr {
    PyValueError::new_err(format!("a stored value does not decode: {what}"))
}

fn varint(b: &[u8], at: &mut usize) -> PyResult<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or_else(|| bad("truncated"))?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(bad("a varint longer than 64 bits"))
}

fn take<'b>(b: &'b [u8], at: &mut usize, n: u64) -> PyResult<&'b [u8]> {
    let n = usize::try_from(n).map_err(|_| bad("a length past memory"))?;
    let end = at
        .checked_add(n)
        .filter(|&e| e <= b.len())
        .ok_or_else(|| bad("truncated"))?;
    let s = &b[*at..end];
    *at = end;
    Ok(s)
}

fn decode_at<'py>(
    py: Python<'py>,
    b: &[u8],
    at: &mut usize,
    depth: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH {
        return Err(bad("nested too deep"));
    }
    let tag = *b.get(*at).ok_or_else(|| bad("truncated"))?;
    *at += 1;
    Ok(match tag {
        NONE => py.None().into_bound(py),
        FALSE => PyBool::new(py, false).to_owned().into_any(),
        TRUE => PyBool::new(py, true).to_owned().into_any(),
        INT => unzigzag(varint(b, at)?).into_pyobject(py)?.into_any(),
        BIGINT => {
            let negative = *b.get(*at).ok_or_else(|| bad("truncated"))? != 0;
            *at += 1;
            let n = varint(b, at)?;
            let mag = take(b, at, n)?;
            let int = py
                .get_type::<PyInt>()
                .call_method1("from_bytes", (PyBytes::new(py, mag), "big"))?;
            if negative { int.neg()? } else { int }
        }
        FLOAT => {
            let raw: [u8; 8] = take(b, at, 8)?.try_into().map_err(|_| bad("truncated"))?;
            PyFloat::new(py, f64::from_bits(u64::from_be_bytes(raw))).into_any()
        }
        STR => {
            let n = varint(b, at)?;
            let s = std::str::from_utf8(take(b, at, n)?).map_err(|_| bad("a str not UTF-8"))?;
            PyString::new(py, s).into_any()
        }
        BYTES => {
            let n = varint(b, at)?;
            PyBytes::new(py, take(b, at, n)?).into_any()
        }
        TUPLE | LIST => {
            let n = varint(b, at)?;
            let items = PyList::empty(py);
            for _ in 0..n {
                items.append(decode_at(py, b, at, depth + 1)?)?;
            }
            if tag == TUPLE {
                PyTuple::new(py, items.iter())?.into_any()
            } else {
                items.into_any()
            }
        }
        DICT => {
            let n = varint(b, at)?;
            let d = PyDict::new(py);
            for _ in 0..n {
                let k = decode_at(py, b, at, depth + 1)?;
                let v = decode_at(py, b, at, depth + 1)?;
                d.set_item(k, v)?;
            }
            d.into_any()
        }
        other => return Err(bad(&format!("unknown tag {other}"))),
    })
}
