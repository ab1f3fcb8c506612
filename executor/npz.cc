// .npz archives (executor/npz.h): the ZIP central directory, then each
// .npy member stored or inflated and parsed by ParseNpy.
#include "executor/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include "executor/npy.h"
#include "ir/file_io.h"

namespace amptrain::executor {

namespace {

constexpr int64_t kMaxNpzBytes = int64_t{4} << 30;
constexpr uint64_t kMaxMembers = 65536;
constexpr uint64_t kDeflateMaxRatio = 1032;
constexpr uint32_t kEndSig = 0x06054b50, kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

// Little-endian fields of `bytes`, each read only after a bounds check.
class Reader {
 public:
  Reader(const std::string& bytes, const std::string& label) : b_(bytes), label_(label) {}
  uint64_t size() const { return b_.size(); }
  bool Has(uint64_t at, uint64_t n) const { return at <= b_.size() && n <= b_.size() - at; }
  uint64_t Le(uint64_t at, int n) const {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b_[at + static_cast<uint64_t>(i)]);
    return v;
  }
  std::string Str(uint64_t at, uint64_t n) const { return b_.substr(at, n); }
  const char* Data(uint64_t at) const { return b_.data() + at; }
  template <class... Args>
  Status Error(Args&&... args) const {
    return InvalidArgument("npz: '", label_, "': ", std::forward<Args>(args)...);
  }

 private:
  const std::string& b_;
  const std::string& label_;
};

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

// The end-of-central-directory record (the last one in the file, after at
// most a 64 KiB comment), and its ZIP64 record when the fields overflow.
StatusOr<Directory> FindDirectory(const Reader& r) {
  if (r.size() < 22) return r.Error("shorter than a ZIP end record (", r.size(), " bytes); not a .npz archive");
  const uint64_t lowest = r.size() > 22 + 65535 ? r.size() - 22 - 65535 : 0;
  uint64_t at = r.size() - 22;
  while (true) {
    if (r.Le(at, 4) == kEndSig && r.Le(at + 20, 2) == r.size() - at - 22) break;
    if (at == lowest) return r.Error("no ZIP end record; not a .npz archive");
    --at;
  }
  if (r.Le(at + 4, 2) != 0 || r.Le(at + 6, 2) != 0) return r.Error("a split (multi-disk) archive");
  Directory d{r.Le(at + 10, 2), r.Le(at + 16, 4), r.Le(at + 12, 4)};
  const bool wide = d.entries == 0xffff || d.offset == 0xffffffff || d.size == 0xffffffff;
  if (wide) {
    if (at < 20 || r.Le(at - 20, 4) != kZip64LocatorSig) return r.Error("ZIP64 fields without a ZIP64 locator");
    const uint64_t rec = r.Le(at - 20 + 8, 8);
    if (!r.Has(rec, 56) || r.Le(rec, 4) != kZip64EndSig) return r.Error("the ZIP64 end record is missing");
    d = Directory{r.Le(rec + 32, 8), r.Le(rec + 48, 8), r.Le(rec + 40, 8)};
  }
  if (d.entries > kMaxMembers) return r.Error(d.entries, " members (at most ", kMaxMembers, ")");
  if (!r.Has(d.offset, d.size) || d.offset + d.size > at) return r.Error("the central directory lies outside the file");
  return d;
}

struct Member {
  std::string name;
  uint64_t method = 0, crc = 0, packed = 0, size = 0, local = 0, flags = 0;
};

// Replaces each of `member`'s 32-bit fields that holds 0xffffffff by the next
// 8 bytes of its ZIP64 extra field (uncompressed size, compressed size, local
// header offset, in that order).
Status ApplyZip64(const Reader& r, uint64_t extra, uint64_t extra_len, Member& m) {
  for (uint64_t at = extra; at + 4 <= extra + extra_len;) {
    const uint64_t id = r.Le(at, 2), len = r.Le(at + 2, 2);
    if (at + 4 + len > extra + extra_len) return r.Error("member '", m.name, "': an extra field runs past its end");
    if (id == 0x0001) {
      uint64_t p = at + 4;
      for (uint64_t* field : {&m.size, &m.packed, &m.local}) {
        if (*field != 0xffffffff) continue;
        if (p + 8 > at + 4 + len) return r.Error("member '", m.name, "': a short ZIP64 extra field");
        *field = r.Le(p, 8);
        p += 8;
      }
    }
    at += 4 + len;
  }
  return Status::Ok();
}

StatusOr<std::vector<Member>> ReadDirectory(const Reader& r, const Directory& d) {
  std::vector<Member> members;
  uint64_t at = d.offset;
  const uint64_t end = d.offset + d.size;
  for (uint64_t i = 0; i < d.entries; ++i) {
    if (at + 46 > end || r.Le(at, 4) != kCentralSig) return r.Error("central directory entry ", i, " is malformed");
    Member m;
    m.flags = r.Le(at + 8, 2);
    m.method = r.Le(at + 10, 2);
    m.crc = r.Le(at + 16, 4);
    m.packed = r.Le(at + 20, 4);
    m.size = r.Le(at + 24, 4);
    const uint64_t name_len = r.Le(at + 28, 2), extra_len = r.Le(at + 30, 2), comment_len = r.Le(at + 32, 2);
    m.local = r.Le(at + 42, 4);
    if (at + 46 + name_len + extra_len + comment_len > end)
      return r.Error("central directory entry ", i, " runs past the directory");
    m.name = r.Str(at + 46, name_len);
    AMP_RETURN_IF_ERROR(ApplyZip64(r, at + 46 + name_len, extra_len, m));
    members.push_back(std::move(m));
    at += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

// A member's bytes, stored or inflated, checked against its sizes and CRC.
StatusOr<std::string> MemberBytes(const Reader& r, const Member& m, uint64_t directory_offset) {
  if (m.flags & 1) return r.Error("member '", m.name, "' is encrypted");
  if (!r.Has(m.local, 30) || r.Le(m.local, 4) != kLocalSig)
    return r.Error("member '", m.name, "': no local header at offset ", m.local);
  const uint64_t data = m.local + 30 + r.Le(m.local + 26, 2) + r.Le(m.local + 28, 2);
  if (!r.Has(data, m.packed) || data + m.packed > directory_offset)
    return r.Error("member '", m.name, "': its ", m.packed, " bytes lie outside the archive's data");
  std::string out;
  if (m.method == 0) {
    if (m.packed != m.size) return r.Error("member '", m.name, "' is stored but its two sizes differ");
    out = r.Str(data, m.packed);
  } else if (m.method == 8) {
    if (m.size > m.packed * kDeflateMaxRatio + 64)
      return r.Error("member '", m.name, "' claims ", m.size, " bytes from ", m.packed, " deflated ones");
    if (m.size > static_cast<uint64_t>(kMaxNpzBytes)) return r.Error("member '", m.name, "' is larger than 4 GiB");
    out.assign(m.size, '\0');
    z_stream zs{};
    if (inflateInit2(&zs, -15) != Z_OK) return Internal("zlib: inflateInit2 failed");
    uint64_t in_done = 0, out_done = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {  // zlib counts in 32 bits: feed at most 1 GiB at a time
      const uint64_t in_chunk = std::min<uint64_t>(m.packed - in_done, uint64_t{1} << 30);
      const uint64_t out_chunk = std::min<uint64_t>(m.size - out_done, uint64_t{1} << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(r.Data(data + in_done)));
      zs.avail_in = static_cast<uInt>(in_chunk);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_done);
      zs.avail_out = static_cast<uInt>(out_chunk);
      rc = inflate(&zs, Z_NO_FLUSH);
      in_done += in_chunk - zs.avail_in;
      out_done += out_chunk - zs.avail_out;
      if (rc == Z_OK && zs.avail_in == in_chunk && zs.avail_out == out_chunk) rc = Z_BUF_ERROR;  // no progress
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || out_done != m.size)
      return r.Error("member '", m.name, "': the deflate stream is corrupt or does not give its ", m.size, " bytes");
  } else {
    return Unimplemented("npz: '", m.name, "' is compressed with ZIP method ", m.method,
                         " (stored and deflate, what NumPy writes, are read)");
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t at = 0; at < out.size();) {
    const uint64_t n = std::min<uint64_t>(out.size() - at, uint64_t{1} << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + at), static_cast<uInt>(n));
    at += n;
  }
  if (crc != m.crc) return r.Error("member '", m.name, "' fails its CRC-32 check (a damaged archive)");
  return out;
}

}  // namespace

StatusOr<NpzArrays> ParseNpz(const std::string& bytes, const std::string& label) {
  const Reader r(bytes, label);
  AMP_ASSIGN_OR_RETURN(Directory d, FindDirectory(r));
  AMP_ASSIGN_OR_RETURN(std::vector<Member> members, ReadDirectory(r, d));
  NpzArrays arrays;
  std::set<std::string> names;
  for (const Member& m : members) {
    if (m.name.size() <= 4 || m.name.compare(m.name.size() - 4, 4, ".npy") != 0) continue;
    const std::string name = m.name.substr(0, m.name.size() - 4);
    if (!names.insert(name).second) return r.Error("two members are named '", m.name, "'");
    AMP_ASSIGN_OR_RETURN(std::string npy, MemberBytes(r, m, d.offset));
    AMP_ASSIGN_OR_RETURN(ir::Tensor t, ParseNpy(npy, label + ":" + m.name));
    arrays.emplace_back(name, std::move(t));
  }
  if (arrays.empty()) return r.Error("no .npy member (not an archive np.savez wrote)");
  return arrays;
}

StatusOr<NpzArrays> ReadNpz(const std::string& path) {
  AMP_ASSIGN_OR_RETURN(std::string bytes, ir::ReadRegularFile(path, kMaxNpzBytes, ".npz file"));
  return ParseNpz(bytes, path);
}

}  // namespace amptrain::executor
