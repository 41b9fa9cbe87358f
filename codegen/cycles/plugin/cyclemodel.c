/* tinyaot cycle model: a QEMU TCG plugin that estimates Cortex-M cycles.
 *
 * Every executed instruction is charged from the core's cost table by its
 * class (thumb_decode.c: from the encoding bits), with the timing rules the
 * Technical Reference Manuals state: taken branches pay the pipeline refill P,
 * a single load right after a single load pipelines (one cycle less), LDM/STM
 * cost per register, unaligned accesses pay extra, a load/store whose IT
 * condition failed costs one cycle. On top, a memory model of the part:
 * instruction fetches and data reads from the flash region go through the
 * flash accelerator (line buffers / caches of flash words, LRU), and a miss
 * waits the part's wait states; sequential prefetch fetches the next line
 * while the current one executes. SRAM/TCM is zero-wait.
 *
 * It is an estimate from documented timings, not a measurement: see
 * docs/cycle-model.md for what it leaves out.
 *
 * Arguments: cfg=<file> (written by codegen/cycles/model.py; one setting per
 * line). Counting: between executions of the `begin` and `end` addresses, or
 * from the entry of the function at `call` to its return (the instruction
 * after the BL/BLX that called it). Stores into the `mark` array (one 32-bit
 * word per layer) stamp per-layer counts. Output goes to the `out` file:
 *     INFER <k> <instructions> <cycles> <ifetch stall> <data stall>
 *     MARK <k> <layer> <instructions> <cycles>      (since inference k began)
 *     CLASS <name> <count> <cycles>                 (over all inferences)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"
#include "thumb_decode.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* ------------------------------------------------------------------ config */

static unsigned base_cost[N_CLASSES];
static unsigned per_reg[N_CLASSES];
static unsigned char pair_ok[N_CLASSES][N_CLASSES];
static unsigned p_direct = 1, p_indirect = 2, p_unaligned = 1, skip_cost = 1;
static int ldr_pipeline, unaligned_rule, dual_issue;

static uint64_t flash_lo, flash_hi; /* [lo, hi) */
static unsigned wait_states, read_bytes = 4;
static int prefetch;

static uint64_t begin_pc = ~0ull, end_pc = ~0ull, call_pc = ~0ull;
static uint64_t mark_lo, mark_hi;
static FILE *out;

/* ------------------------------------------------------------------ caches */

typedef struct {
    uint64_t tag; /* line number + 1; 0 = empty */
    uint64_t fill_t; /* time the critical word arrives */
    uint64_t lru;
    uint8_t crit, pf;
} line_t;

typedef struct {
    unsigned sets, ways, shift, words; /* words = flash reads per line */
    line_t *lines;
} cache_t;

static cache_t icache, dcache;
static uint64_t lru_clock;

static int log2u(unsigned v)
{
    int s = 0;
    while ((1u << s) < v) {
        s++;
    }
    return s;
}

static void cache_init(cache_t *c, unsigned sets, unsigned ways, unsigned line_bytes)
{
    c->sets = sets;
    c->ways = ways;
    c->shift = (unsigned)log2u(line_bytes);
    c->words = line_bytes >= read_bytes ? line_bytes / read_bytes : 1;
    free(c->lines);
    c->lines = sets && ways ? calloc((size_t)sets * ways, sizeof(line_t)) : NULL;
}

static uint64_t arrival(const cache_t *c, const line_t *e, unsigned w)
{
    const unsigned k = (w + c->words - e->crit) % c->words;
    return e->fill_t + (uint64_t)(wait_states + 1) * k;
}

static line_t *cache_find(cache_t *c, uint64_t line)
{
    line_t *set = &c->lines[(line % c->sets) * c->ways];
    for (unsigned i = 0; i < c->ways; i++) {
        if (set[i].tag == line + 1) {
            return &set[i];
        }
    }
    return NULL;
}

static line_t *cache_victim(cache_t *c, uint64_t line)
{
    line_t *set = &c->lines[(line % c->sets) * c->ways];
    line_t *v = &set[0];
    for (unsigned i = 0; i < c->ways; i++) {
        if (set[i].tag == 0) {
            return &set[i];
        }
        if (set[i].lru < v->lru) {
            v = &set[i];
        }
    }
    return v;
}

static void start_prefetch(cache_t *c, uint64_t line, uint64_t start)
{
    if (cache_find(c, line)) {
        return;
    }
    line_t *e = cache_victim(c, line);
    e->tag = line + 1;
    e->crit = 0;
    e->fill_t = start + wait_states + 1;
    e->lru = ++lru_clock;
    e->pf = 1;
}

/* Stall cycles of one access at time t (the access cycle itself is in the
 * instruction's cost). */
static uint64_t cache_access(cache_t *c, uint64_t addr, uint64_t t, int instr)
{
    if (!c->lines) {
        return wait_states; /* no buffer: every read goes to the flash */
    }
    const uint64_t line = addr >> c->shift;
    const unsigned w = (unsigned)((addr & ((1u << c->shift) - 1)) / read_bytes) % c->words;
    line_t *e = cache_find(c, line);
    if (!e) {
        e = cache_victim(c, line);
        e->tag = line + 1;
        e->crit = (uint8_t)w;
        e->fill_t = t + wait_states + 1;
        e->pf = 0;
        e->lru = ++lru_clock;
        if (instr && prefetch) {
            start_prefetch(c, line + 1, e->fill_t + (uint64_t)(wait_states + 1) * (c->words - 1));
        }
        return wait_states;
    }
    e->lru = ++lru_clock;
    const uint64_t a = arrival(c, e, w);
    if (instr && prefetch && e->pf) { /* first use of a prefetched line: fetch the next */
        e->pf = 0;
        start_prefetch(c, line + 1, e->fill_t + (uint64_t)(wait_states + 1) * (c->words - 1));
    }
    return a > t + 1 ? a - (t + 1) : 0;
}

static int in_flash(uint64_t a) { return wait_states && a >= flash_lo && a < flash_hi; }

/* ------------------------------------------------------------ instructions */

typedef struct insn {
    uint32_t pc;
    uint8_t size, cls, flags, nregs;
    uint8_t marker; /* 1 begin, 2 end, 4 call */
    struct insn *next;
} insn_t;

#define HASH_BITS 16
static insn_t *table[1u << HASH_BITS];

static insn_t *insn_for(uint32_t pc, const uint8_t *bytes, unsigned size)
{
    const unsigned h = (pc >> 1) & ((1u << HASH_BITS) - 1);
    for (insn_t *i = table[h]; i; i = i->next) {
        if (i->pc == pc && i->size == size) {
            return i;
        }
    }
    insn_t *i = calloc(1, sizeof(*i));
    if (!i) {
        abort();
    }
    const decoded_t d = thumb_decode(bytes, size);
    i->pc = pc;
    i->size = (uint8_t)size;
    i->cls = d.cls;
    i->flags = d.flags;
    i->nregs = d.nregs;
    i->marker = (uint8_t)((pc == begin_pc ? 1 : 0) | (pc == end_pc ? 2 : 0) | (pc == call_pc ? 4 : 0));
    i->next = table[h];
    table[h] = i;
    return i;
}

/* ------------------------------------------------------------------- state */

static uint64_t now, ninsn, istall, dstall;
static const insn_t *cur;         /* instruction in flight */
static unsigned cur_nmem;         /* its memory accesses so far */
static uint64_t cur_extra;        /* its data-side stall cycles */
static int last_load, last_dual, last_single, last_taken;
static unsigned last_cls = C_UNKNOWN;

static int counting;
static uint64_t ret_pc = ~0ull;
static unsigned infer_idx;
static uint64_t c0, i0, is0, ds0;
static uint64_t cls_count[N_CLASSES], cls_cycles[N_CLASSES];

static void finalize(const insn_t *p, const insn_t *next)
{
    unsigned cost = base_cost[p->cls] + per_reg[p->cls] * p->nregs;
    const int skipped = (p->flags & F_MEM) && cur_nmem == 0 && !(p->flags & F_PC && p->cls == C_TB);
    int is_load = 0;
    if (skipped) {
        cost = skip_cost; /* IT condition failed: no access */
    } else if (ldr_pipeline && last_load && (p->cls == C_LDR || p->cls == C_STR_REG) && cost > 1) {
        cost -= 1; /* pipelined behind the previous single load */
    }
    if (!skipped && p->cls == C_LDR && !(p->flags & F_PC)) {
        is_load = 1;
    }
    const int taken = (p->flags & F_PC) && next && next->pc != p->pc + p->size;
    int single = cost == 1 && !taken;
    int dual = 0;
    if (dual_issue && !last_dual && last_single && single && pair_ok[last_cls][p->cls]) {
        cost = 0; /* issued together with the previous instruction */
        dual = 1;
    }
    if (taken) {
        cost += (p->flags & F_DIRECT) ? p_direct : p_indirect;
        if (next->size == 4 && (next->pc & 2)) {
            cost += p_unaligned; /* 32-bit target straddling two fetch words */
        }
    }
    cost += (unsigned)cur_extra;
    dstall += cur_extra;
    now += cost;
    if (counting) {
        cls_count[p->cls]++;
        cls_cycles[p->cls] += cost;
    }
    last_load = is_load;
    last_dual = dual;
    last_single = single && !dual;
    last_taken = taken;
    last_cls = p->cls;
}

static void inference_begin(void)
{
    counting = 1;
    c0 = now;
    i0 = ninsn;
    is0 = istall;
    ds0 = dstall;
}

static void inference_end(void)
{
    counting = 0;
    if (out) {
        fprintf(out, "INFER %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", infer_idx,
                ninsn - i0, now - c0, istall - is0, dstall - ds0);
        fflush(out);
    }
    infer_idx++;
}

static uint64_t ifetch(const insn_t *i)
{
    if (!in_flash(i->pc)) {
        return 0;
    }
    uint64_t s = cache_access(&icache, i->pc, now, 1);
    const uint64_t last = i->pc + i->size - 2;
    if ((last >> icache.shift) != ((uint64_t)i->pc >> icache.shift) ||
        (last / read_bytes) != (i->pc / read_bytes)) {
        s += cache_access(&icache, last, now + s, 1);
    }
    return s;
}

static void on_exec(unsigned int vcpu, void *ud)
{
    (void)vcpu;
    const insn_t *i = ud;
    if (i == cur && (i->flags & F_MEM) && cur_nmem == 0) {
        return; /* icount replays an I/O instruction at the start of a new block */
    }
    if (cur) {
        finalize(cur, i);
    }
    if (i->marker) {
        if ((i->marker & 2) && counting && ret_pc == ~0ull) {
            inference_end();
        }
        if ((i->marker & 1) && !counting) {
            inference_begin();
        }
        if ((i->marker & 4) && !counting && cur) {
            ret_pc = cur->pc + cur->size;
            inference_begin();
        }
    } else if (counting && i->pc == ret_pc) {
        inference_end();
        ret_pc = ~0ull;
    }
    const uint64_t s = ifetch(i);
    istall += s;
    now += s;
    ninsn++;
    cur = i;
    cur_nmem = 0;
    cur_extra = 0;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr, void *ud)
{
    (void)vcpu;
    (void)ud;
    cur_nmem++;
    const unsigned size = 1u << qemu_plugin_mem_size_shift(info);
    const int store = qemu_plugin_mem_is_store(info);
    if (unaligned_rule && (addr & (size - 1))) {
        cur_extra += (size == 4 && (addr & 1)) ? 2 : 1;
    }
    if (!store && in_flash(addr)) {
        cur_extra += cache_access(&dcache, addr, now, 0);
    }
    if (store && addr >= mark_lo && addr < mark_hi && counting && out) {
        fprintf(out, "MARK %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", infer_idx, (addr - mark_lo) / 4,
                ninsn - i0, now - c0);
    }
}

static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    const size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t k = 0; k < n; k++) {
        struct qemu_plugin_insn *qi = qemu_plugin_tb_get_insn(tb, k);
        /* QEMU 7.2 reports wrong bytes and sizes for Thumb instructions next
         * to a 1 KiB page boundary (the size check peeks at the next
         * halfword); the guest memory behind the instruction is right, so
         * the encoding is read there and the size taken from its first
         * halfword (A5.1: 0b11101, 0b11110, 0b11111 start a 32-bit one). */
        const uint8_t *bytes = qemu_plugin_insn_haddr(qi);
        if (!bytes) {
            bytes = qemu_plugin_insn_data(qi);
        }
        const unsigned size = (bytes[1] >> 3) >= 0x1D ? 4 : 2;
        insn_t *i = insn_for((uint32_t)qemu_plugin_insn_vaddr(qi), bytes, size);
        qemu_plugin_register_vcpu_insn_exec_cb(qi, on_exec, QEMU_PLUGIN_CB_NO_REGS, i);
        if (i->flags & F_MEM) {
            qemu_plugin_register_vcpu_mem_cb(qi, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                             NULL);
        }
    }
}

static void on_exit_cb(qemu_plugin_id_t id, void *ud)
{
    (void)id;
    (void)ud;
    if (!out) {
        return;
    }
    for (unsigned c = 0; c < N_CLASSES; c++) {
        if (cls_count[c]) {
            fprintf(out, "CLASS %s %" PRIu64 " %" PRIu64 "\n", class_name(c), cls_count[c],
                    cls_cycles[c]);
        }
    }
    fprintf(out, "EXIT %" PRIu64 " %" PRIu64 "\n", ninsn, now);
    fclose(out);
    out = NULL;
}

/* ------------------------------------------------------------------ config */

static int cfg_error(const char *what, const char *line)
{
    char msg[640];
    snprintf(msg, sizeof msg, "cyclemodel: bad config line (%.40s): %.500s\n", what, line);
    qemu_plugin_outs(msg);
    return 1;
}

static int load_config(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        return cfg_error("cannot open", path);
    }
    char line[512];
    unsigned isets = 1, iways = 1, iline = 4, dsets = 0, dways = 0, dline = 4;
    while (fgets(line, sizeof line, f)) {
        char key[64], a[256], b[64];
        unsigned long long u1 = 0, u2 = 0;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') {
            continue;
        }
        if (sscanf(line, "%63s", key) != 1) {
            continue;
        }
        if (!strcmp(key, "class")) {
            if (sscanf(line, "%*s %63s %llu %llu", b, &u1, &u2) != 3 || class_by_name(b) < 0) {
                fclose(f);
                return cfg_error("class", line);
            }
            base_cost[class_by_name(b)] = (unsigned)u1;
            per_reg[class_by_name(b)] = (unsigned)u2;
        } else if (!strcmp(key, "pair")) {
            char x[64], y[64];
            if (sscanf(line, "%*s %63s %63s", x, y) != 2 || class_by_name(x) < 0 || class_by_name(y) < 0) {
                fclose(f);
                return cfg_error("pair", line);
            }
            pair_ok[class_by_name(x)][class_by_name(y)] = 1;
        } else if (!strcmp(key, "out")) {
            if (sscanf(line, "%*s %255s", a) != 1 || !(out = fopen(a, "w"))) {
                fclose(f);
                return cfg_error("out", line);
            }
        } else if (!strcmp(key, "icache") || !strcmp(key, "dcache") || !strcmp(key, "flash") ||
                   !strcmp(key, "mark")) {
            unsigned long long u3 = 0;
            const int n = sscanf(line, "%*s %lli %lli %lli", (long long *)&u1, (long long *)&u2,
                                 (long long *)&u3);
            if (!strcmp(key, "icache") && n == 3) {
                isets = (unsigned)u1, iways = (unsigned)u2, iline = (unsigned)u3;
            } else if (!strcmp(key, "dcache") && n == 3) {
                dsets = (unsigned)u1, dways = (unsigned)u2, dline = (unsigned)u3;
            } else if (!strcmp(key, "flash") && n == 2) {
                flash_lo = u1, flash_hi = u2;
            } else if (!strcmp(key, "mark") && n == 2) {
                mark_lo = u1, mark_hi = u1 + 4 * u2;
            } else {
                fclose(f);
                return cfg_error(key, line);
            }
        } else {
            if (sscanf(line, "%*s %lli", (long long *)&u1) != 1) {
                fclose(f);
                return cfg_error("value", line);
            }
            if (!strcmp(key, "p_direct")) p_direct = (unsigned)u1;
            else if (!strcmp(key, "p_indirect")) p_indirect = (unsigned)u1;
            else if (!strcmp(key, "p_unaligned")) p_unaligned = (unsigned)u1;
            else if (!strcmp(key, "skip_cost")) skip_cost = (unsigned)u1;
            else if (!strcmp(key, "ldr_pipeline")) ldr_pipeline = (int)u1;
            else if (!strcmp(key, "unaligned_rule")) unaligned_rule = (int)u1;
            else if (!strcmp(key, "dual_issue")) dual_issue = (int)u1;
            else if (!strcmp(key, "wait_states")) wait_states = (unsigned)u1;
            else if (!strcmp(key, "read_bytes")) read_bytes = (unsigned)u1 ? (unsigned)u1 : 4;
            else if (!strcmp(key, "prefetch")) prefetch = (int)u1;
            else if (!strcmp(key, "begin")) begin_pc = u1;
            else if (!strcmp(key, "end")) end_pc = u1;
            else if (!strcmp(key, "call")) call_pc = u1;
            else {
                fclose(f);
                return cfg_error("unknown key", line);
            }
        }
    }
    fclose(f);
    cache_init(&icache, isets, iways, iline);
    cache_init(&dcache, dsets, dways, dline);
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    if (info->version.min > QEMU_PLUGIN_VERSION) {
        qemu_plugin_outs("cyclemodel: this QEMU's plugin API is newer than the plugin\n");
        return 1;
    }
    const char *cfg = NULL;
    for (int k = 0; k < argc; k++) {
        if (!strncmp(argv[k], "cfg=", 4)) {
            cfg = argv[k] + 4;
        }
    }
    if (!cfg) {
        qemu_plugin_outs("cyclemodel: needs cfg=<file>\n");
        return 1;
    }
    if (load_config(cfg)) {
        return 1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
    return 0;
}
