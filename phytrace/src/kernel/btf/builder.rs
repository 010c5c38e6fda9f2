//! Builds small BTF blobs in memory, for tests.

/// A BTF blob under construction; type ids are handed out in order from 1.
pub struct Builder {
    types: Vec<u8>,
    strings: Vec<u8>,
    next_id: u32,
    /// Where this blob's strings start (split BTF: after the base's).
    string_base: u32,
}

/// A struct or union member: name (empty: anonymous), type id, bit offset, bitfield size.
pub type MemberSpec<'a> = (&'a str, u32, u32, u32);

impl Builder {
    pub fn new() -> Self {
        Self {
            types: Vec::new(),
            strings: vec![0],
            next_id: 1,
            string_base: 0,
        }
    }

    /// Split BTF on top of `base`: ids and string offsets continue the base's.
    pub fn split(base: &Self) -> Self {
        Self {
            types: Vec::new(),
            strings: Vec::new(),
            next_id: base.next_id,
            string_base: base.string_base + base.strings.len() as u32,
        }
    }

    /// The id the next type will get.
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    fn string(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        let off = self.string_base + self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        off
    }

    fn words(&mut self, words: &[u32]) {
        for word in words {
            self.types.extend_from_slice(&word.to_ne_bytes());
        }
    }

    /// Appends a type record: fixed part, then `trailing` words; returns its id.
    pub fn raw(
        &mut self,
        name: &str,
        kind: u32,
        kflag: bool,
        vlen: u32,
        size_or_type: u32,
        trailing: &[u32],
    ) -> u32 {
        let name_off = self.string(name);
        let info = (u32::from(kflag) << 31) | (kind << 24) | vlen;
        self.words(&[name_off, info, size_or_type]);
        self.words(trailing);
        self.next_id += 1;
        self.next_id - 1
    }

    /// An int of `size` bytes, bits `offset..offset + bits` (`BTF_INT_OFFSET`, `BTF_INT_BITS`).
    pub fn int(&mut self, name: &str, size: u32, offset: u32, bits: u32) -> u32 {
        self.raw(name, 1, false, 0, size, &[(offset << 16) | bits])
    }

    pub fn ptr(&mut self, to: u32) -> u32 {
        self.raw("", 2, false, 0, to, &[])
    }

    pub fn array(&mut self, elem: u32, index: u32, len: u32) -> u32 {
        self.raw("", 3, false, 0, 0, &[elem, index, len])
    }

    pub fn typedef(&mut self, name: &str, to: u32) -> u32 {
        self.raw(name, 8, false, 0, to, &[])
    }

    pub fn volatile(&mut self, to: u32) -> u32 {
        self.raw("", 9, false, 0, to, &[])
    }

    pub fn constant(&mut self, to: u32) -> u32 {
        self.raw("", 10, false, 0, to, &[])
    }

    pub fn fwd(&mut self, name: &str) -> u32 {
        self.raw(name, 7, false, 0, 0, &[])
    }

    /// A struct (`union == false`) or union; `kind_flag` is set when a member is a bitfield.
    pub fn composite(&mut self, union: bool, name: &str, size: u32, members: &[MemberSpec]) -> u32 {
        let kflag = members.iter().any(|m| m.3 > 0);
        self.composite_with(union, name, size, kflag, members)
    }

    /// Like [`Builder::composite`] with `kind_flag` given (clear: bitfields in int types).
    pub fn composite_with(
        &mut self,
        union: bool,
        name: &str,
        size: u32,
        kflag: bool,
        members: &[MemberSpec],
    ) -> u32 {
        let mut trailing = Vec::new();
        for &(member, ty, bits, bitfield) in members {
            let offset = if kflag { (bitfield << 24) | bits } else { bits };
            trailing.extend([self.string(member), ty, offset]);
        }
        let kind = if union { 5 } else { 4 };
        self.raw(name, kind, kflag, members.len() as u32, size, &trailing)
    }

    pub fn enum32(&mut self, name: &str, signed: bool, values: &[(&str, i32)]) -> u32 {
        let mut trailing = Vec::new();
        for &(enumerator, value) in values {
            trailing.extend([self.string(enumerator), value as u32]);
        }
        self.raw(name, 6, signed, values.len() as u32, 4, &trailing)
    }

    pub fn enum64(&mut self, name: &str, signed: bool, values: &[(&str, u64)]) -> u32 {
        let mut trailing = Vec::new();
        for &(enumerator, value) in values {
            trailing.extend([self.string(enumerator), value as u32, (value >> 32) as u32]);
        }
        self.raw(name, 19, signed, values.len() as u32, 8, &trailing)
    }

    /// The blob: header, type section, string section.
    pub fn build(&self) -> Vec<u8> {
        let mut blob = Vec::new();
        blob.extend_from_slice(&0xeb9f_u16.to_ne_bytes());
        blob.extend_from_slice(&[1, 0]);
        let types = self.types.len() as u32;
        for word in [24, 0, types, types, self.strings.len() as u32] {
            blob.extend_from_slice(&u32::to_ne_bytes(word));
        }
        blob.extend_from_slice(&self.types);
        blob.extend_from_slice(&self.strings);
        blob
    }
}
