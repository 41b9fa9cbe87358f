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
 * Several parts (`part NAME` sections) are priced in one run: they share the
 * instruction stream and the core costs, each has its own memory system and
 * clock.
 *
 * It is an estimate from documented timings, not a measurement: see
 * docs/cycle-model.md for what it leaves out.
 *
 * Arguments: cfg=<file> (written by codegen/cycles/tables.py; one setting per
 * line). Counting: between executions of the `begin` and `end` addresses, or
 * from the entry of the function at `call` to its return (the instruction
 * after the BL/BLX that called it). Stores into the `mark` array (one 32-bit
 * word per layer) stamp per-layer counts. Output goes to the `out` file:
 *     INFER <k> <part> <instructions> <cycles> <ifetch stall> <data stall>
 *     MARK <k> <layer> <instructions> <cycles of part 0> <part 1> ...
 *     CLASS <name> <count> <core cycles>            (over all inferences)
 *     EXIT <instructions executed in the whole run>
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

static uint64_t begin_pc = ~0ull, end_pc = ~0ull, call_pc = ~0ull;
static uint64_t mark_lo, mark_hi;
static FILE *out;

/* ------------------------------------------------------------------- parts */

typedef struct {
    uint64_t tag; /* line number + 1; 0 = empty */
    uint64_t fill_t; /* time the critical word arrives */
    uint64_t lru;
    uint8_t crit;
} line_t;

typedef struct {
    unsigned sets, ways, shift, words; /* words = flash reads per line */
    line_t *lines;
} cache_t;

/* One part's memory system and clock. All parts see the same instruction
 * stream and core costs; each adds its own flash stalls to its own clock,
 * so one QEMU run prices every part. */
typedef struct {
    char name[32];
    uint64_t flash_lo, flash_hi; /* [lo, hi) */
    unsigned wait_states, read_bytes, isets, iways, iline, dsets, dways, dline;
    int prefetch;
    cache_t ic, dc;
    uint64_t lru_clock;
    uint64_t pf_line, pf_fill; /* prefetch buffer: line + 1 (0 = empty), arrival */
    uint64_t now, istall, dstall, extra; /* extra: data stalls of the instruction in flight */
    uint64_t c0, is0, ds0;
} part_t;

#define MAX_PARTS 8
static part_t parts[MAX_PARTS];
static unsigned nparts;

static int log2u(unsigned v)
{
    int s = 0;
    while ((1u << s) < v) {
        s++;
    }
    return s;
}

static void cache_init(cache_t *c, unsigned sets, unsigned ways, unsigned line_bytes, unsigned read_bytes)
{
    c->sets = sets;
    c->ways = ways;
    c->shift = (unsigned)log2u(line_bytes);
    c->words = line_bytes >= read_bytes ? line_bytes / read_bytes : 1;
    c->lines = sets && ways ? calloc((size_t)sets * ways, sizeof(line_t)) : NULL;
}

static uint64_t arrival(const part_t *p, const cache_t *c, const line_t *e, unsigned w)
{
    const unsigned k = (w + c->words - e->crit) % c->words;
    return e->fill_t + (uint64_t)(p->wait_states + 1) * k;
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

/* The prefetch buffer: one line, read from the flash after the line it
 * follows; it enters the cache when the core first asks for it. */
static void start_prefetch(part_t *p, cache_t *c, uint64_t line, uint64_t start)
{
    if (cache_find(c, line) || p->pf_line == line + 1) {
        return;
    }
    p->pf_line = line + 1;
    p->pf_fill = start + p->wait_states + 1;
}

/* Stall cycles of one flash read at time t (the access cycle itself is in
 * the instruction's cost). */
static uint64_t cache_access(part_t *p, cache_t *c, uint64_t addr, uint64_t t, int instr)
{
    if (!c->lines) {
        return p->wait_states; /* no buffer: every read goes to the flash */
    }
    const uint64_t line = addr >> c->shift;
    const unsigned w = (unsigned)((addr & ((1u << c->shift) - 1)) / p->read_bytes) % c->words;
    const uint64_t fill = (uint64_t)(p->wait_states + 1) * (c->words - 1);
    line_t *e = cache_find(c, line);
    if (!e) {
        e = cache_victim(c, line);
        e->tag = line + 1;
        e->lru = ++p->lru_clock;
        if (instr && p->prefetch && p->pf_line == line + 1) { /* in the prefetch buffer */
            e->crit = 0;
            e->fill_t = p->pf_fill;
            p->pf_line = 0;
        } else {
            e->crit = (uint8_t)w;
            e->fill_t = t + p->wait_states + 1;
        }
        if (instr && p->prefetch) {
            start_prefetch(p, c, line + 1, e->fill_t + fill);
        }
    } else {
        e->lru = ++p->lru_clock;
    }
    const uint64_t a = arrival(p, c, e, w);
    return a > t + 1 ? a - (t + 1) : 0;
}

static int in_flash(const part_t *p, uint64_t a)
{
    return p->wait_states && a >= p->flash_lo && a < p->flash_hi;
}

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

static uint64_t ninsn;
static const insn_t *cur;         /* instruction in flight */
static unsigned cur_nmem;         /* its memory accesses so far */
static int last_load, last_dual, last_single;
static unsigned last_cls = C_UNKNOWN;

static int counting;
static uint64_t ret_pc = ~0ull;
static unsigned infer_idx;
static uint64_t i0;
static uint64_t cls_count[N_CLASSES], cls_cycles[N_CLASSES];

/* Core cycles of the finished instruction p (next: the one after it). */
static unsigned core_cost(const insn_t *p, const insn_t *next)
{
    unsigned cost = base_cost[p->cls] + per_reg[p->cls] * p->nregs;
    const int skipped = (p->flags & F_MEM) && cur_nmem == 0 && p->cls != C_TB;
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
    const int single = cost == 1 && !taken;
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
    last_load = is_load;
    last_dual = dual;
    last_single = single && !dual;
    last_cls = p->cls;
    return cost;
}

static void finalize(const insn_t *p, const insn_t *next)
{
    const unsigned cost = core_cost(p, next);
    for (unsigned k = 0; k < nparts; k++) {
        parts[k].now += cost + parts[k].extra;
        parts[k].dstall += parts[k].extra;
        parts[k].extra = 0;
    }
    if (counting) {
        cls_count[p->cls]++;
        cls_cycles[p->cls] += cost;
    }
}

static void inference_begin(void)
{
    counting = 1;
    i0 = ninsn;
    for (unsigned k = 0; k < nparts; k++) {
        parts[k].c0 = parts[k].now;
        parts[k].is0 = parts[k].istall;
        parts[k].ds0 = parts[k].dstall;
    }
}

static void inference_end(void)
{
    counting = 0;
    if (out) {
        for (unsigned k = 0; k < nparts; k++) {
            const part_t *p = &parts[k];
            fprintf(out, "INFER %u %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", infer_idx,
                    p->name, ninsn - i0, p->now - p->c0, p->istall - p->is0, p->dstall - p->ds0);
        }
        fflush(out);
    }
    infer_idx++;
}

static uint64_t ifetch(part_t *p, const insn_t *i)
{
    if (!in_flash(p, i->pc)) {
        return 0;
    }
    uint64_t s = cache_access(p, &p->ic, i->pc, p->now, 1);
    const uint64_t last = i->pc + i->size - 2;
    if ((last >> p->ic.shift) != ((uint64_t)i->pc >> p->ic.shift) ||
        (last / p->read_bytes) != (i->pc / p->read_bytes)) {
        s += cache_access(p, &p->ic, last, p->now + s, 1);
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
    for (unsigned k = 0; k < nparts; k++) {
        const uint64_t s = ifetch(&parts[k], i);
        parts[k].istall += s;
        parts[k].now += s;
    }
    ninsn++;
    cur = i;
    cur_nmem = 0;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr, void *ud)
{
    (void)vcpu;
    (void)ud;
    cur_nmem++;
    const unsigned size = 1u << qemu_plugin_mem_size_shift(info);
    const int store = qemu_plugin_mem_is_store(info);
    unsigned unaligned = 0;
    if (unaligned_rule && (addr & (size - 1))) {
        unaligned = (size == 4 && (addr & 1)) ? 2 : 1;
    }
    for (unsigned k = 0; k < nparts; k++) {
        part_t *p = &parts[k];
        if (!store && in_flash(p, addr)) {
            /* an LDM/LDRD/VLDM's accesses go out one after another, each once the one
             * before has its data: access k starts k cycles and the stalls so far after
             * the first (not all at the instruction's start, which would count the wait
             * for one flash word once per access reading it) */
            p->extra += cache_access(p, &p->dc, addr, p->now + p->extra + (cur_nmem - 1), 0);
        }
        p->extra += unaligned;
    }
    if (store && addr >= mark_lo && addr < mark_hi && counting && out) {
        fprintf(out, "MARK %u %" PRIu64 " %" PRIu64, infer_idx, (addr - mark_lo) / 4, ninsn - i0);
        for (unsigned k = 0; k < nparts; k++) {
            fprintf(out, " %" PRIu64, parts[k].now - parts[k].c0);
        }
        fputc('\n', out);
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
    fprintf(out, "EXIT %" PRIu64 "\n", ninsn);
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
    part_t *p = NULL; /* the part being described ("part NAME" starts one) */
    int bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        char key[64], a[256], b[64], c[64];
        long long v[3] = {0, 0, 0};
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#' || sscanf(line, "%63s", key) != 1) {
            continue;
        }
        const int n = sscanf(line, "%*s %lli %lli %lli", &v[0], &v[1], &v[2]);
        if (!strcmp(key, "class")) {
            if (sscanf(line, "%*s %63s %lli %lli", b, &v[0], &v[1]) != 3 || class_by_name(b) < 0) {
                bad = cfg_error("class", line);
            } else {
                base_cost[class_by_name(b)] = (unsigned)v[0];
                per_reg[class_by_name(b)] = (unsigned)v[1];
            }
        } else if (!strcmp(key, "pair")) {
            if (sscanf(line, "%*s %63s %63s", b, c) != 2 || class_by_name(b) < 0 || class_by_name(c) < 0) {
                bad = cfg_error("pair", line);
            } else {
                pair_ok[class_by_name(b)][class_by_name(c)] = 1;
            }
        } else if (!strcmp(key, "out")) {
            if (sscanf(line, "%*s %255s", a) != 1 || !(out = fopen(a, "w"))) {
                bad = cfg_error("out", line);
            }
        } else if (!strcmp(key, "part")) {
            if (nparts == MAX_PARTS || sscanf(line, "%*s %31s", b) != 1) {
                bad = cfg_error("part", line);
            } else {
                p = &parts[nparts++];
                memset(p, 0, sizeof *p);
                snprintf(p->name, sizeof p->name, "%.31s", b);
                p->read_bytes = 4;
                p->isets = p->iways = 1;
                p->iline = p->dline = 4;
            }
        } else if (!strcmp(key, "mark") && n == 2) {
            mark_lo = (uint64_t)v[0];
            mark_hi = (uint64_t)v[0] + 4 * (uint64_t)v[1];
        } else if (n < 1) {
            bad = cfg_error("value", line);
        } else if (!strcmp(key, "p_direct")) p_direct = (unsigned)v[0];
        else if (!strcmp(key, "p_indirect")) p_indirect = (unsigned)v[0];
        else if (!strcmp(key, "p_unaligned")) p_unaligned = (unsigned)v[0];
        else if (!strcmp(key, "skip_cost")) skip_cost = (unsigned)v[0];
        else if (!strcmp(key, "ldr_pipeline")) ldr_pipeline = (int)v[0];
        else if (!strcmp(key, "unaligned_rule")) unaligned_rule = (int)v[0];
        else if (!strcmp(key, "dual_issue")) dual_issue = (int)v[0];
        else if (!strcmp(key, "begin")) begin_pc = (uint64_t)v[0];
        else if (!strcmp(key, "end")) end_pc = (uint64_t)v[0];
        else if (!strcmp(key, "call")) call_pc = (uint64_t)v[0];
        else if (!p) bad = cfg_error("needs a part first", line);
        else if (!strcmp(key, "flash") && n == 2) p->flash_lo = (uint64_t)v[0], p->flash_hi = (uint64_t)v[1];
        else if (!strcmp(key, "wait_states")) p->wait_states = (unsigned)v[0];
        else if (!strcmp(key, "read_bytes") && v[0] > 0) p->read_bytes = (unsigned)v[0];
        else if (!strcmp(key, "prefetch")) p->prefetch = (int)v[0];
        else if (!strcmp(key, "icache") && n == 3 && v[0] > 0 && v[1] > 0)
            p->isets = (unsigned)v[0], p->iways = (unsigned)v[1], p->iline = (unsigned)v[2];
        else if (!strcmp(key, "dcache") && n == 3)
            p->dsets = (unsigned)v[0], p->dways = (unsigned)v[1], p->dline = (unsigned)v[2];
        else bad = cfg_error("unknown key", line);
    }
    fclose(f);
    if (bad) {
        return 1;
    }
    if (!nparts) {
        return cfg_error("no part", path);
    }
    for (unsigned k = 0; k < nparts; k++) {
        part_t *q = &parts[k];
        cache_init(&q->ic, q->isets, q->iways, q->iline, q->read_bytes);
        cache_init(&q->dc, q->dsets, q->dways, q->dline, q->read_bytes);
    }
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
