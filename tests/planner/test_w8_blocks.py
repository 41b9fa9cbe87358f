"""planner/w8_columns.block_sizes: the blocks of pixel pairs tinyaot_convolve_fast_w8_s8 is
planned with. Each block widens every weight once more, so the planner must be offered
every number of blocks, not only powers of two (ic01's 8x8 conv fits 3 blocks, not 2)."""
from math import ceil

from codegen.planner.w8_columns import MIN_BLOCK, block_sizes


def test_every_number_of_blocks_is_offered_fewest_first():
    for pairs in range(1, 130):
        # by brute force: for each number of blocks some block of MIN_BLOCK..pairs pairs
        # gives, the smallest such block (no scratch beyond what that number needs)
        smallest = {}
        for b in range(min(pairs, MIN_BLOCK), pairs + 1):
            n = ceil(pairs / b)
            smallest[n] = min(smallest.get(n, b), b)
        want = [smallest[n] for n in sorted(smallest)]
        assert block_sizes(pairs) == want, pairs
