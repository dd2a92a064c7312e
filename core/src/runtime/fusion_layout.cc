#include "runtime/fusion_layout.h"

#include <string>

#include "common/error.h"
#include "device/device.h"
#include "runtime/fusion.h"
#include "runtime/pending_op.h"

namespace hvd::runtime {
namespace {

Place buffer(uint64_t offset) { return {Place::In::kBuffer, 0, 0, offset}; }

Place input(size_t entry, size_t tensor, uint64_t offset = 0) {
  return {Place::In::kInput, static_cast<uint32_t>(entry),
          static_cast<uint32_t>(tensor), offset};
}

Place output(size_t entry, size_t tensor, uint64_t offset = 0) {
  return {Place::In::kOutput, static_cast<uint32_t>(entry),
          static_cast<uint32_t>(tensor), offset};
}

constexpr Place kZeros{Place::In::kZeros, 0, 0, 0};

uint64_t row_elements(const std::vector<int64_t>& shape) {
  uint64_t row = 1;
  for (size_t d = 1; d < shape.size(); ++d) {
    row *= static_cast<uint64_t>(shape[d]);
  }
  return row;
}

void prefix(const std::vector<size_t>& counts, std::vector<size_t>& displs) {
  displs.resize(counts.size());
  size_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = at;
    at += counts[i];
  }
}

[[noreturn]] void malformed(const Response& r, const std::string& what) {
  throw Error(HVD_ERR_INTERNAL, std::string(collective_name(r.collective)) +
                                    " response: " + what);
}

// Allreduce and broadcast: every tensor whole, one after another.
void lay_out_whole(const Response& r, int32_t rank,
                   const std::vector<Held>& held, bool in_place, Layout& l) {
  const uint64_t esize = dtype_size(r.dtype);
  const bool broadcast = r.collective == HVD_COLL_BROADCAST;
  const bool root = broadcast && rank == r.root;
  if (in_place) {
    l.count = element_count(r.entries[0].shapes[0]);
    if (broadcast) {
      // The root sends from where every rank receives: its output.
      if (root)
        l.copy_in.push_back({output(0, 0), input(0, 0), l.count * esize});
      l.send = l.recv = output(0, 0);
    } else {
      l.send = input(0, 0);
      l.recv = output(0, 0);
    }
    return;
  }
  uint64_t off = 0;
  for (size_t e = 0; e < r.entries.size(); ++e) {
    for (size_t t = 0; t < r.entries[e].shapes.size(); ++t) {
      const uint64_t bytes = element_count(r.entries[e].shapes[t]) * esize;
      if (!broadcast) {
        l.copy_in.push_back(
            {buffer(off), held[e].inputs ? input(e, t) : kZeros, bytes});
      } else if (root && held[e].inputs) {
        l.copy_in.push_back({buffer(off), input(e, t), bytes});
      }
      if (held[e].outputs) {
        // The root's result is its input (the executor drops a copy onto
        // itself when the op runs in place).
        l.copy_out.push_back(
            {output(e, t), root ? input(e, t) : buffer(off), bytes});
      }
      off += bytes;
    }
  }
  l.buffer_bytes = off;
  l.send = l.recv = buffer(0);
  l.count = off / esize;
}

// Allgather and reducescatter buffers are rank-major: rank k's rows of
// every tensor, in entry order, then rank k + 1's.
struct RankMajor {
  // rows[n * size + k]: the rows rank k holds of the n-th tensor (the
  // entries' tensors in order), as negotiated (allgather) or split from the
  // first dimension (reducescatter).
  std::vector<int64_t> rows;
  uint64_t elements = 0;  // of every rank
};

// The rows of `r` by rank, and l.counts and l.displs (elements by rank).
RankMajor rank_major(const Response& r, int32_t size, Layout& l) {
  RankMajor m;
  l.counts.assign(size, 0);
  for (const Entry& e : r.entries) {
    const bool gathered = r.collective == HVD_COLL_ALLGATHER;
    if (gathered && e.per_rank.size() != e.shapes.size()) {
      malformed(r, "per-rank rows");
    }
    for (size_t t = 0; t < e.shapes.size(); ++t) {
      if (gathered) {
        if (e.per_rank[t].size() != static_cast<size_t>(size)) {
          malformed(r, "per-rank rows of '" + e.name + "'");
        }
        m.rows.insert(m.rows.end(), e.per_rank[t].begin(), e.per_rank[t].end());
      } else {
        const std::vector<int64_t> split =
            reducescatter_rows(e.shapes[t][0], size);
        m.rows.insert(m.rows.end(), split.begin(), split.end());
      }
      const int64_t* rows = &m.rows[m.rows.size() - size];
      const uint64_t row = row_elements(e.shapes[t]);
      for (int32_t k = 0; k < size; ++k) {
        l.counts[k] += static_cast<uint64_t>(rows[k]) * row;
      }
    }
  }
  prefix(l.counts, l.displs);
  m.elements = l.displs.back() + l.counts.back();
  return m;
}

// One rank's rows of one tensor in a rank-major buffer: at `offset` in the
// buffer, `skip` bytes into the tensor (the rows of the ranks before).
struct Block {
  int32_t rank;
  size_t entry, tensor;
  uint64_t offset, skip, bytes;
};

// visit(block) for every block of a rank-major buffer, in buffer order.
template <typename Visit>
void for_each_block(const Response& r, int32_t size, uint64_t esize,
                    const RankMajor& m, const Layout& l, Visit visit) {
  for (int32_t k = 0; k < size; ++k) {
    uint64_t off = l.displs[k] * esize;
    size_t n = 0;
    for (size_t e = 0; e < r.entries.size(); ++e) {
      for (size_t t = 0; t < r.entries[e].shapes.size(); ++t, ++n) {
        const int64_t* by_rank = &m.rows[n * size];
        const uint64_t row_bytes = row_elements(r.entries[e].shapes[t]) * esize;
        uint64_t rows_before = 0;
        for (int32_t j = 0; j < k; ++j) rows_before += by_rank[j];
        const uint64_t bytes = by_rank[k] * row_bytes;
        visit(Block{k, e, t, off, rows_before * row_bytes, bytes});
        off += bytes;
      }
    }
  }
}

// Allgather: a rank-major buffer; each output is the tensor's rows of
// every rank, in rank order.
void lay_out_allgather(const Response& r, int32_t rank, int32_t size,
                       const std::vector<Held>& held, bool in_place,
                       Layout& l) {
  const uint64_t esize = dtype_size(r.dtype);
  const RankMajor m = rank_major(r, size, l);
  l.count = l.counts[rank];
  if (in_place) {
    l.send = input(0, 0);
    l.recv = output(0, 0);
    return;
  }
  for_each_block(r, size, esize, m, l, [&](const Block& b) {
    if (b.rank == rank && held[b.entry].inputs) {
      l.copy_in.push_back(
          {buffer(b.offset), input(b.entry, b.tensor), b.bytes});
    }
    if (held[b.entry].outputs) {
      l.copy_out.push_back(
          {output(b.entry, b.tensor, b.skip), buffer(b.offset), b.bytes});
    }
  });
  l.buffer_bytes = m.elements * esize;
  l.send = buffer(l.displs[rank] * esize);
  l.recv = buffer(0);
}

// Alltoall (one entry, one tensor): what this rank sends, by peer, then
// what it receives, by peer.
void lay_out_alltoall(const Response& r, int32_t rank, int32_t size,
                      const std::vector<Held>& held, bool in_place, Layout& l) {
  const uint64_t esize = dtype_size(r.dtype);
  if (r.entries.size() != 1) malformed(r, "more than one entry");
  const Entry& entry = r.entries[0];
  if (entry.per_rank.size() != static_cast<size_t>(size)) {
    malformed(r, "splits of '" + entry.name + "'");
  }
  const uint64_t row = row_elements(entry.shapes[0]);
  l.send_counts.assign(size, 0);
  l.counts.assign(size, 0);
  l.received_splits.assign(size, 0);
  uint64_t rows_moved = 0;
  for (int32_t p = 0; p < size; ++p) {
    if (entry.per_rank[p].size() != static_cast<size_t>(size)) {
      malformed(r, "splits of '" + entry.name + "'");
    }
    l.send_counts[p] = entry.per_rank[rank][p] * row;
    l.counts[p] = entry.per_rank[p][rank] * row;
    l.received_splits[p] = static_cast<int32_t>(entry.per_rank[p][rank]);
    for (int32_t q = 0; q < size; ++q) rows_moved += entry.per_rank[p][q];
  }
  prefix(l.send_counts, l.send_displs);
  prefix(l.counts, l.displs);
  l.moves_data = rows_moved * row > 0;
  if (in_place) {
    l.send = input(0, 0);
    l.recv = output(0, 0);
    return;
  }
  const uint64_t send_bytes =
      (l.send_displs.back() + l.send_counts.back()) * esize;
  const uint64_t recv_bytes = (l.displs.back() + l.counts.back()) * esize;
  if (held[0].inputs) {
    l.copy_in.push_back({buffer(0), input(0, 0), send_bytes});
  }
  if (held[0].outputs) {
    l.copy_out.push_back({output(0, 0), buffer(send_bytes), recv_bytes});
  }
  l.buffer_bytes = send_bytes + recv_bytes;
  l.send = buffer(0);
  l.recv = buffer(send_bytes);
}

// Reducescatter: a rank-major buffer; this rank's block of the result
// after it.
void lay_out_reducescatter(const Response& r, int32_t rank, int32_t size,
                           const std::vector<Held>& held, bool in_place,
                           Layout& l) {
  const uint64_t esize = dtype_size(r.dtype);
  const RankMajor m = rank_major(r, size, l);
  l.count = m.elements;
  if (in_place) {
    l.send = input(0, 0);
    l.recv = output(0, 0);
    return;
  }
  const uint64_t recv = m.elements * esize;
  const uint64_t mine = l.displs[rank] * esize;
  for_each_block(r, size, esize, m, l, [&](const Block& b) {
    l.copy_in.push_back(
        {buffer(b.offset),
         held[b.entry].inputs ? input(b.entry, b.tensor, b.skip) : kZeros,
         b.bytes});
    if (b.rank == rank && held[b.entry].outputs) {
      l.copy_out.push_back(
          {output(b.entry, b.tensor), buffer(recv + b.offset - mine), b.bytes});
    }
  });
  l.buffer_bytes = recv + l.counts[rank] * esize;
  l.send = buffer(0);
  l.recv = buffer(recv);
}

}  // namespace

void lay_out(const Response& r, int32_t rank, int32_t size,
             const std::vector<Held>& held, bool in_place, Layout& l) {
  if (held.size() != r.entries.size() || r.entries.empty()) {
    malformed(r, std::to_string(r.entries.size()) + " entries, " +
                     std::to_string(held.size()) + " held");
  }
  if (rank < 0 || rank >= size) {
    malformed(r,
              "rank " + std::to_string(rank) + " of " + std::to_string(size));
  }
  for (const Entry& e : r.entries) {
    for (const auto& shape : e.shapes) {
      if (shape.empty() && r.collective != HVD_COLL_ALLREDUCE &&
          r.collective != HVD_COLL_BROADCAST) {
        malformed(r, "'" + e.name + "' has no first dimension");
      }
    }
  }
  if (in_place && (r.entries.size() != 1 || r.entries[0].shapes.size() != 1 ||
                   !held[0].inputs || !held[0].outputs)) {
    malformed(r, "in place, but not one held tensor");
  }
  l.buffer_bytes = 0;
  l.send = l.recv = Place{};
  l.count = 0;
  l.counts.clear();
  l.displs.clear();
  l.send_counts.clear();
  l.send_displs.clear();
  l.received_splits.clear();
  l.moves_data = false;
  l.copy_in.clear();
  l.copy_out.clear();
  switch (r.collective) {
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_BROADCAST:
      lay_out_whole(r, rank, held, in_place, l);
      l.moves_data = l.count > 0;
      break;
    case HVD_COLL_ALLGATHER:
      lay_out_allgather(r, rank, size, held, in_place, l);
      l.moves_data = l.displs.back() + l.counts.back() > 0;
      break;
    case HVD_COLL_ALLTOALL:
      lay_out_alltoall(r, rank, size, held, in_place, l);
      break;
    case HVD_COLL_REDUCESCATTER:
      lay_out_reducescatter(r, rank, size, held, in_place, l);
      l.moves_data = l.count > 0;
      break;
    default:
      malformed(r, "no data layout");
  }
}

std::vector<int64_t> gathered_shape(const Response& r, size_t entry,
                                    size_t tensor, int32_t rank) {
  const Entry& e = r.entries.at(entry);
  std::vector<int64_t> shape = e.shapes.at(tensor);
  if (shape.empty()) malformed(r, "'" + e.name + "' has no first dimension");
  int64_t rows = 0;
  if (r.collective == HVD_COLL_ALLGATHER) {
    for (int64_t n : e.per_rank.at(tensor)) rows += n;
  } else if (r.collective == HVD_COLL_ALLTOALL) {
    for (const auto& splits : e.per_rank) rows += splits.at(rank);
  } else {
    malformed(r, "no gathered output");
  }
  shape[0] = rows;
  return shape;
}

}  // namespace hvd::runtime
