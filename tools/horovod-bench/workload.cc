#include "workload.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "device/half.h"

namespace hvd_bench {
namespace {

constexpr double kUnwritten = -7;

// One dtype's storage type and its conversions from and to double.
template <typename T>
struct Plain {
  using Storage = T;
  static Storage encode(double v) { return static_cast<T>(v); }
  static double decode(Storage s) { return static_cast<double>(s); }
  static constexpr bool kExact = true;
};
struct Half {
  using Storage = uint16_t;
  static Storage encode(double v) {
    return hvd::float_to_half(static_cast<float>(v));
  }
  static double decode(Storage s) { return hvd::half_to_float(s); }
  static constexpr bool kExact = false;
};
struct BFloat {
  using Storage = uint16_t;
  static Storage encode(double v) {
    return hvd::float_to_bfloat16(static_cast<float>(v));
  }
  static double decode(Storage s) { return hvd::bfloat16_to_float(s); }
  static constexpr bool kExact = false;
};

template <typename Body>
auto with_codec(hvd_dtype dtype, Body&& body) {
  switch (dtype) {
    case HVD_FLOAT64:
      return body(Plain<double>{});
    case HVD_FLOAT16:
      return body(Half{});
    case HVD_BFLOAT16:
      return body(BFloat{});
    case HVD_INT32:
      return body(Plain<int32_t>{});
    case HVD_INT64:
      return body(Plain<int64_t>{});
    default:
      return body(Plain<float>{});
  }
}

double summand(int rank, size_t i) {
  return 1 + rank % 8 + static_cast<double>(i % 13);
}
double gathered(int rank, size_t j) {
  return 1 + (rank % 16) * 8 + static_cast<double>(j % 7);
}
double exchanged(int from, int to, size_t j) {
  return 1 + from % 16 + 16 * (to % 16) + static_cast<double>(j % 5);
}

// The sum over `ranks` ranks of 1 + rank % 8.
double summand_base(int ranks) {
  double base = 0;
  for (int k = 0; k < ranks && k < 8; ++k)
    base += (1 + k) * ((ranks - 1 - k) / 8 + 1);
  return base;
}

// The expected output element i of `shape` on `rank`; `base` is
// summand_base(s.ranks).
double expected(const Shape& s, int rank, size_t i, double base) {
  switch (s.collective) {
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_REDUCESCATTER: {
      size_t at = s.collective == HVD_COLL_ALLREDUCE
                      ? i
                      : static_cast<size_t>(rank) * s.block + i;
      return base + static_cast<double>(s.ranks) * static_cast<double>(at % 13);
    }
    case HVD_COLL_ALLGATHER:
      return gathered(static_cast<int>(i / s.block), i % s.block);
    case HVD_COLL_ALLTOALL:
      return exchanged(static_cast<int>(i / s.block), rank, i % s.block);
    default:  // broadcast from rank 0
      return summand(0, i);
  }
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

}  // namespace

void Workload::Free::operator()(void* p) const { std::free(p); }

Workload::Workload(size_t max_send_bytes, size_t max_recv_bytes) {
  auto allocate = [](size_t bytes) {
    constexpr size_t kPage = 4096;
    bytes = (bytes + kPage - 1) / kPage * kPage;
    if (bytes == 0) bytes = kPage;
    void* p = std::aligned_alloc(kPage, bytes);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return static_cast<uint8_t*>(p);
  };
  send_.reset(allocate(max_send_bytes));
  recv_.reset(allocate(max_recv_bytes));
}

void Workload::fill(const Shape& s, int rank) {
  with_codec(s.dtype, [&](auto codec) {
    using C = decltype(codec);
    auto* send = reinterpret_cast<typename C::Storage*>(send_.get());
    auto* recv = reinterpret_cast<typename C::Storage*>(recv_.get());
    const auto unwritten = C::encode(kUnwritten);
    for (size_t i = 0; i < s.recv_count; ++i) recv[i] = unwritten;
    switch (s.collective) {
      case HVD_COLL_ALLREDUCE:
      case HVD_COLL_REDUCESCATTER:
        for (size_t i = 0; i < s.send_count; ++i)
          send[i] = C::encode(summand(rank, i));
        break;
      case HVD_COLL_ALLGATHER:
        for (size_t j = 0; j < s.send_count; ++j)
          send[j] = C::encode(gathered(rank, j));
        break;
      case HVD_COLL_ALLTOALL:
        for (size_t i = 0; i < s.send_count; ++i) {
          send[i] = C::encode(
              exchanged(rank, static_cast<int>(i / s.block), i % s.block));
        }
        break;
      default:  // broadcast: the root's output buffer is the input
        if (rank == 0) {
          for (size_t i = 0; i < s.recv_count; ++i)
            recv[i] = C::encode(summand(0, i));
        }
        break;
    }
  });
}

std::string Workload::check(const Shape& s, int rank) const {
  return with_codec(s.dtype, [&](auto codec) -> std::string {
    using C = decltype(codec);
    const auto* recv =
        reinterpret_cast<const typename C::Storage*>(recv_.get());
    const double base = summand_base(s.ranks);
    size_t bad = 0, first = 0;
    double first_got = 0, first_want = 0;
    for (size_t i = 0; i < s.recv_count; ++i) {
      double want = C::decode(C::encode(expected(s, rank, i, base)));
      double got = C::decode(recv[i]);
      bool ok = C::kExact ? got == want
                          : std::fabs(got - want) <=
                                std::fmax(1.0, 0.02 * std::fabs(want));
      if (ok) continue;
      if (bad++ == 0) {
        first = i;
        first_got = got;
        first_want = want;
      }
    }
    if (bad == 0) return "";
    return "element " + std::to_string(first) + " of the output is " +
           (first_got == kUnwritten ? std::string("unwritten")
                                    : number(first_got)) +
           ", expected " + number(first_want) + " (" + std::to_string(bad) +
           " of " + std::to_string(s.recv_count) + " elements wrong)";
  });
}

}  // namespace hvd_bench
