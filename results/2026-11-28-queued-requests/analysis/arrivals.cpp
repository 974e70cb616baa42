// The co-location benchmark's arrival times (ms from the window's start) for one load: the same
// generator as coop::bench::PoissonArrivals. usage: arrivals LOAD ALONE_MS SECONDS SEED
#include <cstdio>
#include <cstdlib>
#include <random>

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  const double load = std::atof(argv[1]), alone_ms = std::atof(argv[2]);
  const double end_ms = std::atof(argv[3]) * 1e3;
  std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 10));
  std::exponential_distribution<double> gap(load / alone_ms);
  for (double at = gap(rng); at < end_ms; at += gap(rng)) std::printf("%.6f\n", at);
}
