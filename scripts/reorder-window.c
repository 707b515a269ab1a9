/*
 * How many instructions between two dependent-miss lookups still let the
 * CPU overlap them (docs/bench-log/2026-11-25-engine.md § Why a GET is
 * short).
 *
 * Each "lookup" is the shape of an Amalgam GET hit: a random 64-byte
 * bucket line in 64 MiB (the load misses), then an item in 96 MiB whose
 * address comes from that line (a second miss that depends on the first),
 * both on transparent hugepages. Consecutive lookups are independent, so
 * an out-of-order core can overlap one lookup's misses with the next
 * one's, but only while the instructions in between fit its reorder
 * window. FILL independent ALU instructions are added after each lookup;
 * the time per lookup shows where the overlap stops.
 *
 *   gcc -O2 -o /tmp/reorder-window scripts/reorder-window.c && /tmp/reorder-window
 *
 * Not part of the build or the tests: a measurement of the machine.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define BUCKETS (1u << 20) /* 64 MiB of 64-byte lines */
#define ITEMS (4u << 20)   /* 96 MiB of 24-byte items */
#define LOOKUPS 10000000u

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void *map_huge(size_t bytes) {
    void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

#define F10 "add $1,%%r8\n add $1,%%r9\n add $1,%%r10\n add $1,%%r11\n add $1,%%r8\n" \
            "add $1,%%r9\n add $1,%%r10\n add $1,%%r11\n add $1,%%r8\n add $1,%%r9\n"
#define F50 F10 F10 F10 F10 F10

int main(void) {
    uint64_t *bucket = map_huge((size_t)BUCKETS * 64);
    uint64_t *item = map_huge((size_t)ITEMS * 24);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < (size_t)BUCKETS * 8; i++) bucket[i] = (xorshift(&x) % ITEMS) * 3;
    for (size_t i = 0; i < (size_t)ITEMS * 3; i++) item[i] = i;
    uint32_t *ids = malloc(sizeof(uint32_t) * LOOKUPS);
    for (size_t i = 0; i < LOOKUPS; i++) ids[i] = xorshift(&x) % BUCKETS;
    uint64_t sink = 0;
    double t, s;
#define RUN(fill, FILL)                                                               \
    t = now();                                                                        \
    for (size_t i = 0; i < LOOKUPS; i++) {                                            \
        uint64_t p = bucket[(size_t)ids[i] * 8 + 1];                                  \
        sink += item[p];                                                              \
        __asm__ volatile(FILL ::: "r8", "r9", "r10", "r11");                          \
    }                                                                                 \
    s = now() - t;                                                                    \
    printf("fill %3d instructions: %6.1f ns per lookup\n", fill, s * 1e9 / LOOKUPS);
    RUN(0, "")
    RUN(50, F50)
    RUN(100, F50 F50)
    RUN(150, F50 F50 F50)
    RUN(200, F50 F50 F50 F50)
    RUN(300, F50 F50 F50 F50 F50 F50)
    printf("(%llu)\n", (unsigned long long)sink);
    return 0;
}
