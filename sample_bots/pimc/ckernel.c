/* The double-dummy search of the rest of a deal in C: the same search as search.py (the reference it is
 * tested against), as a CPython extension module `pimc_csearch` (built by build.py, loaded by fast.py).
 *
 * What is the same as search.py: the rules of card play (read from a search.Rules object), belote followed
 * as the engine does, alpha-beta over the score of the deal with the card-point search once the score is a
 * non-decreasing function of the card points, the bisection of `points_root`, the root values of every
 * legal card. So every value the two give is the same (tests/pimc/test_ckernel.py).
 *
 * What is different, for speed (none of it changes a value: alpha-beta's exact values do not depend on the
 * order of moves or on what the tables hold, as long as every bound stored is a true bound):
 * - the deal's score at the leaves is read from a table (an array of C ints that the ruleset side fills from
 *   the engine's scoring, world.Scorer.leaf_table); an entry left unfilled is asked of the `leaf` callable
 *   once and written to the table (the callback path);
 * - transposition tables of fixed size (bounded memory; buckets of four score entries and of two card-point
 *   entries; entries keyed by the whole position at the start of a trick: the four hands, the seat to lead,
 *   and for the score the tricks taken, the card points, the belotes and the open belote cards), with the
 *   best lead kept for move ordering in both searches; a `Tables` object holds them and can be shared by
 *   the searches of one decision (and more), its entries tagged by an epoch that stands for the rules and
 *   the leaf table they were found under, so that an entry is only ever read by a search of the same rules
 *   and leaf values;
 * - the root's cards after the first by MTD(f) (zero-window searches from the best value so far), and from
 *   the card-point search itself when the leaves are the card points alone; the last trick in closed form;
 *   the equivalent cards of the move ordering found by table lookups;
 * - the clock (CLOCK_MONOTONIC, time.perf_counter's clock on Linux) is looked at every 1024 nodes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define INF (1 << 30)
#define MISSING INT32_MIN /* a leaf-table entry not filled yet */
#define NBEL 5            /* belote points per side: 0, 20, 40, 60, 80 (four belote suits at most) */
#define CLOCK_EVERY 1024 /* nodes between two looks at the clock */
#define SBUCKET 4 /* score entries a bucket (three cache lines) */
#define PBUCKET 2 /* card-point entries a bucket (a cache line) */
#define NSIG 8 /* (rules, leaf) pairs a Tables object keeps an epoch for */

enum { SUIT_TRUMP = 0, NO_TRUMP = 1, ALL_TRUMP = 2 };
enum { OK = 0, TIMEOUT = 1, PYERROR = 2 };

static const uint32_t SUIT_MASK[4] = {0xFFu, 0xFF00u, 0xFF0000u, 0xFF000000u};
static PyObject *SearchTimeout;

/* --- Rules ------------------------------------------------------------------------------------------------ */
typedef struct {
    /* what a search.Rules says (compared to tell rules apart: RAW_SIZE bytes) */
    int32_t mode, trump, last_bonus;
    int32_t partner_may_win, must_undertrump, must_head_plain_suit, in_line;
    uint32_t belote_mask;
    int32_t power[32], points[32];
    /* derived from it */
    int32_t total_points;
    uint32_t above[32];
    int8_t by_power[4][8];
    uint16_t byte_points[4][256];
    /* By suit and byte of that suit's cards (bit r: the card of rank r): the byte's bits in order of strength
     * (bit 0 the strongest card), its cards in that order, and the bits i >= 1 of that order whose card has
     * the points of card i - 1 (the equivalent cards of `ordered`). */
    uint8_t by_strength[4][256];
    int8_t cards[4][256][8];
    uint8_t same_points[4][256];
} CRules;

#define RAW_SIZE offsetof(CRules, total_points)

/* pext8[mask][value]: the bits of `value` where `mask` has one, packed low (BMI2's pext on a byte). */
static uint8_t pext8[256][256];

static void init_pext8(void) {
    for (int m = 0; m < 256; m++)
        for (int v = 0; v < 256; v++) {
            int out = 0, j = 0;
            for (int i = 0; i < 8; i++)
                if (m >> i & 1) out |= (v >> i & 1) << j++;
            pext8[m][v] = (uint8_t)out;
        }
}

static int read_int_attr(PyObject *obj, const char *name, int32_t *out) {
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (v == NULL) return -1;
    long x = PyLong_AsLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = (int32_t)x;
    return 0;
}

static int read_bool_attr(PyObject *obj, const char *name, int32_t *out) {
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (v == NULL) return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (t < 0) return -1;
    *out = t;
    return 0;
}

static int read_list32(PyObject *obj, const char *name, int32_t *out) {
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (v == NULL) return -1;
    PyObject *seq = PySequence_Fast(v, "rules: a sequence of 32 ints");
    Py_DECREF(v);
    if (seq == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 32) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "rules.%s: 32 entries expected", name);
        return -1;
    }
    for (int i = 0; i < 32; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        out[i] = (int32_t)x;
    }
    Py_DECREF(seq);
    return 0;
}

static int derive(CRules *r);

/* The kernel's rules from a search.Rules (its attributes; the derived tables are computed here as there). */
static int rules_from(PyObject *obj, CRules *r) {
    memset(r, 0, sizeof *r); /* padding too: Tables compares rules with memcmp */
    if (read_int_attr(obj, "mode", &r->mode) || read_int_attr(obj, "trump", &r->trump) ||
        read_int_attr(obj, "last_bonus", &r->last_bonus) ||
        read_bool_attr(obj, "partner_may_win", &r->partner_may_win) ||
        read_bool_attr(obj, "must_undertrump", &r->must_undertrump) ||
        read_bool_attr(obj, "must_head_plain_suit", &r->must_head_plain_suit) ||
        read_bool_attr(obj, "belote_cards_in_line", &r->in_line) || read_list32(obj, "power", r->power) ||
        read_list32(obj, "points", r->points))
        return -1;
    PyObject *bm = PyObject_GetAttrString(obj, "belote_mask");
    if (bm == NULL) return -1;
    unsigned long m = PyLong_AsUnsignedLongMask(bm);
    Py_DECREF(bm);
    if (PyErr_Occurred()) return -1;
    r->belote_mask = (uint32_t)m;
    if (r->mode < 0 || r->mode > 2 || r->trump < -1 || r->trump > 3 || (r->mode == SUIT_TRUMP && r->trump < 0)) {
        PyErr_SetString(PyExc_ValueError, "rules: bad mode or trump");
        return -1;
    }
    /* the derived tables of rules seen lately (every world of a decision has the same) */
    static CRules *made[4];
    static int next_made;
    for (int i = 0; i < 4; i++)
        if (made[i] != NULL && memcmp(made[i], r, RAW_SIZE) == 0) {
            memcpy(r, made[i], sizeof *r);
            return 0;
        }
    if (derive(r) < 0) return -1;
    if (made[next_made] == NULL) made[next_made] = PyMem_RawMalloc(sizeof *r);
    if (made[next_made] != NULL) memcpy(made[next_made], r, sizeof *r);
    next_made = (next_made + 1) & 3;
    return 0;
}

/* The tables derived from the rules' fields. */
static int derive(CRules *r) {
    int total = r->last_bonus;
    for (int c = 0; c < 32; c++) {
        if (r->points[c] < 0 || r->points[c] > 1000) {
            PyErr_SetString(PyExc_ValueError, "rules: card points out of range");
            return -1;
        }
        total += r->points[c];
        uint32_t above = 0;
        for (int k = 0; k < 8; k++) {
            int o = (c & ~7) | k;
            if (r->power[o] > r->power[c]) above |= 1u << o;
        }
        r->above[c] = above;
    }
    if (total > 2000) {
        PyErr_SetString(PyExc_ValueError, "rules: too many card points");
        return -1;
    }
    r->total_points = total;
    for (int s = 0; s < 4; s++) {
        /* strongest first; ties in the order of rank, as Python's stable sort on -power leaves them */
        int8_t order[8];
        for (int k = 0; k < 8; k++) order[k] = (int8_t)(8 * s + k);
        for (int i = 1; i < 8; i++) {
            int8_t x = order[i];
            int j = i - 1;
            while (j >= 0 && r->power[order[j]] < r->power[x]) {
                order[j + 1] = order[j];
                j--;
            }
            order[j + 1] = x;
        }
        memcpy(r->by_power[s], order, 8);
        for (int b = 0; b < 256; b++) {
            int bits = 0, n = 0;
            for (int i = 0; i < 8; i++) {
                int c = order[i];
                if (b >> (c & 7) & 1) {
                    bits |= 1 << i;
                    r->cards[s][b][n] = (int8_t)c;
                    if (n > 0 && r->points[c] == r->points[r->cards[s][b][n - 1]]) r->same_points[s][b] |= 1 << n;
                    n++;
                }
            }
            r->by_strength[s][b] = (uint8_t)bits;
        }
        for (int b = 0; b < 256; b++) {
            int p = 0;
            for (int k = 0; k < 8; k++)
                if (b >> k & 1) p += r->points[8 * s + k];
            r->byte_points[s][b] = (uint16_t)p;
        }
    }
    return 0;
}

static inline int points_of(const CRules *r, uint32_t m) {
    return r->byte_points[0][m & 255] + r->byte_points[1][m >> 8 & 255] + r->byte_points[2][m >> 16 & 255] +
           r->byte_points[3][m >> 24];
}

/* Deal.legal_cards's rule, as search.Rules.legal. */
static inline uint32_t legal(const CRules *r, uint32_t hand, int seat, int k, int led, int best, int best_seat) {
    if (k == 0) return hand;
    uint32_t follow = hand & SUIT_MASK[led];
    if (r->mode == NO_TRUMP) return follow ? follow : hand;
    if (r->mode == ALL_TRUMP) {
        if (!follow) return hand;
        uint32_t over = follow & r->above[best];
        return over ? over : follow;
    }
    int trump = r->trump;
    if (follow) {
        if (led == trump || (r->must_head_plain_suit && best >> 3 == led)) {
            uint32_t over = follow & r->above[best];
            return over ? over : follow;
        }
        return follow;
    }
    uint32_t trumps = hand & SUIT_MASK[trump];
    if (!trumps) return hand;
    if (r->partner_may_win && best_seat == (seat ^ 2)) return hand;
    if (best >> 3 == trump) {
        uint32_t over = trumps & r->above[best];
        if (over) return over;
        return r->must_undertrump ? trumps : hand;
    }
    return trumps;
}

static inline int beats(const CRules *r, int card, int best) {
    if (card >> 3 == best >> 3) return r->power[card] > r->power[best];
    return card >> 3 == r->trump;
}

/* --- Transposition tables ----------------------------------------------------------------------------------- */
typedef struct {
    uint32_t h[4];
    uint64_t info;   /* leader | won << 2 | cp0 << 4 | bel0 << 16 | bel1 << 32 */
    uint64_t belote; /* pending << 32 | second */
    uint32_t epoch;  /* 0: empty */
    int32_t lo, hi;
    int8_t best;
    int8_t depth; /* tricks left: the deeper an entry, the more work it saves */
} SEntry;

typedef struct {
    uint32_t h[4];
    uint32_t epoch;
    int16_t lo, hi;
    int8_t leader, best, depth;
    int8_t pad[5]; /* 32 bytes: two entries a cache line */
} PEntry;

typedef struct {
    int used;
    unsigned char rules[RAW_SIZE];
    PyObject *table; /* the leaf table (a strong reference, so that its address stays its own) or NULL */
    PyObject *leaf;  /* the leaf callable when there is no table */
    uint32_t epoch;
    uint64_t stamp;
} Sig;

typedef struct {
    PyObject_HEAD
    SEntry *st;
    PEntry *pt;
    void *st_mem, *pt_mem;
    uint64_t sbuckets, pbuckets; /* powers of two */
    uint32_t next_epoch;
    uint64_t clock; /* for the signatures' least recently used */
    Sig ssig[NSIG], psig[NSIG];
    long long stores, probes, hits;
} TablesObject;

static PyTypeObject TablesType;

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t hash_hands(const uint32_t *h, uint64_t extra) {
    uint64_t a = (uint64_t)h[0] | (uint64_t)h[1] << 32;
    uint64_t b = (uint64_t)h[2] | (uint64_t)h[3] << 32;
    return mix64(a ^ mix64(b ^ mix64(extra)));
}

static void sig_clear(Sig *s) {
    Py_CLEAR(s->table);
    Py_CLEAR(s->leaf);
    s->used = 0;
}

/* The epoch of entries found under these rules and this leaf (table, or callable when no table): the same as
 * before for the same pair, else a new one (the pair least recently used is forgotten). */
static uint32_t tables_epoch(TablesObject *t, Sig *sigs, const CRules *rules, PyObject *table, PyObject *leaf) {
    t->clock++;
    for (int i = 0; i < NSIG; i++) {
        Sig *s = &sigs[i];
        if (s->used && s->table == table && s->leaf == leaf && memcmp(s->rules, rules, RAW_SIZE) == 0) {
            s->stamp = t->clock;
            return s->epoch;
        }
    }
    int victim = 0;
    for (int i = 0; i < NSIG; i++) {
        if (!sigs[i].used) {
            victim = i;
            break;
        }
        if (sigs[i].stamp < sigs[victim].stamp) victim = i;
    }
    Sig *s = &sigs[victim];
    sig_clear(s);
    s->used = 1;
    memcpy(s->rules, rules, RAW_SIZE);
    Py_XINCREF(table);
    s->table = table;
    Py_XINCREF(leaf);
    s->leaf = leaf;
    s->epoch = t->next_epoch++;
    if (t->next_epoch == 0) t->next_epoch = 1;
    s->stamp = t->clock;
    return s->epoch;
}

static uint32_t fresh_epoch(TablesObject *t) {
    uint32_t e = t->next_epoch++;
    if (t->next_epoch == 0) t->next_epoch = 1;
    return e;
}

static int bits_arg(int bits, const char *what) {
    if (bits < 4 || bits > 26) {
        PyErr_Format(PyExc_ValueError, "%s: between 4 and 26 (a power of two of buckets)", what);
        return -1;
    }
    return 0;
}

static PyObject *Tables_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"score_bits", "points_bits", NULL};
    int sbits = 16, pbits = 17;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ii", names, &sbits, &pbits)) return NULL;
    if (bits_arg(sbits, "score_bits") || bits_arg(pbits, "points_bits")) return NULL;
    TablesObject *t = (TablesObject *)type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    t->sbuckets = 1ULL << sbits;
    t->pbuckets = 1ULL << pbits;
    /* calloc: zero pages come from the system as they are first touched, so a small search costs little */
    t->st_mem = calloc(t->sbuckets * SBUCKET * sizeof(SEntry) + 64, 1);
    t->pt_mem = calloc(t->pbuckets * PBUCKET * sizeof(PEntry) + 64, 1);
    /* buckets aligned on cache lines */
    t->st = (SEntry *)(((uintptr_t)t->st_mem + 63) & ~(uintptr_t)63);
    t->pt = (PEntry *)(((uintptr_t)t->pt_mem + 63) & ~(uintptr_t)63);
    if (t->st_mem == NULL || t->pt_mem == NULL) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    t->next_epoch = 1;
    return (PyObject *)t;
}

static void Tables_dealloc(TablesObject *t) {
    for (int i = 0; i < NSIG; i++) {
        sig_clear(&t->ssig[i]);
        sig_clear(&t->psig[i]);
    }
    free(t->st_mem);
    free(t->pt_mem);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *Tables_stats(TablesObject *t, PyObject *unused) {
    (void)unused;
    return Py_BuildValue("{s:L,s:L,s:L,s:K,s:K,s:n}", "stores", t->stores, "probes", t->probes, "hits", t->hits,
                         "score_entries", (unsigned long long)(t->sbuckets * SBUCKET), "points_entries",
                         (unsigned long long)(t->pbuckets * PBUCKET), "bytes",
                         (Py_ssize_t)(t->sbuckets * SBUCKET * sizeof(SEntry) + t->pbuckets * PBUCKET * sizeof(PEntry)));
}

static PyMethodDef Tables_methods[] = {
    {"stats", (PyCFunction)Tables_stats, METH_NOARGS, "Counters: stores, probes, hits; sizes."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject TablesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pimc_csearch.Tables",
    .tp_basicsize = sizeof(TablesObject),
    .tp_dealloc = (destructor)Tables_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Transposition tables of fixed size: Tables(score_bits=16, points_bits=17), 2**bits buckets of "
              "four entries each. Shared by the searches given it, each reading only the entries of its "
              "own rules and leaf values.",
    .tp_methods = Tables_methods,
    .tp_new = Tables_new,
};

/* --- The search ----------------------------------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    CRules r;
    PyObject *leaf;      /* callable(cp0, won, bel0, bel1) -> int, or None */
    PyObject *table_obj; /* the leaf table given, or NULL */
    Py_buffer view;
    int has_view;
    int32_t *table; /* [won 0..3][bel0 / 20][bel1 / 20][cp0 0..total]: the given table or one of our own */
    int32_t *sure;  /* by belote outcome: the score for each final cp0 (the card-point search), lazily */
    int8_t sure_state[NBEL * NBEL]; /* 0 not built, 1 built, 2 not monotone */
    TablesObject *tables;
    uint32_t sepoch, pepoch;
    double deadline;
    long long nodes, leaf_calls;
    int countdown;
    uint32_t h[4];
    int tricks_left, cp0, won, bel0, bel1;
    uint32_t pending, second, trick_mask;
    int use_points, cp_lo, cp_hi;
    int best_lead;
    int err;
} SearchObject;

static PyTypeObject SearchType;
static TablesObject *default_tables; /* the searches given no Tables: a fresh epoch each */

static inline Py_ssize_t table_len(const CRules *r) { return (Py_ssize_t)4 * NBEL * NBEL * (r->total_points + 1); }

static inline Py_ssize_t table_index(const CRules *r, int cp0, int won, int b0, int b1) {
    return (((Py_ssize_t)won * NBEL + b0 / 20) * NBEL + b1 / 20) * (r->total_points + 1) + cp0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int over_time(SearchObject *s) {
    s->nodes++;
    if (--s->countdown <= 0) {
        s->countdown = CLOCK_EVERY;
        if (s->deadline != 0.0 && now_s() > s->deadline) {
            s->err = TIMEOUT;
            return 1;
        }
    }
    return 0;
}

/* The deal's score (side 0's): from the table, else asked of the leaf callable once and written there. */
static int leaf_value(SearchObject *s, int cp0, int won, int b0, int b1) {
    if (cp0 < 0 || cp0 > s->r.total_points || won < 0 || won > 3 || b0 < 0 || b1 < 0 || b0 / 20 >= NBEL ||
        b1 / 20 >= NBEL || b0 % 20 || b1 % 20) {
        PyErr_Format(PyExc_ValueError, "leaf out of the table: cp0=%d won=%d belotes %d, %d", cp0, won, b0, b1);
        s->err = PYERROR;
        return 0;
    }
    Py_ssize_t i = table_index(&s->r, cp0, won, b0, b1);
    int32_t v = s->table[i];
    if (v != MISSING) return v;
    if (s->leaf == Py_None) {
        PyErr_Format(PyExc_ValueError, "the leaf table has no entry for cp0=%d won=%d belotes %d, %d, and no leaf "
                     "callable was given", cp0, won, b0, b1);
        s->err = PYERROR;
        return 0;
    }
    PyObject *res = PyObject_CallFunction(s->leaf, "iiii", cp0, won, b0, b1);
    if (res == NULL) {
        s->err = PYERROR;
        return 0;
    }
    long x = PyLong_AsLong(res);
    Py_DECREF(res);
    if ((x == -1 && PyErr_Occurred()) || x <= -INF || x >= INF || x == MISSING) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "leaf value out of range");
        s->err = PYERROR;
        return 0;
    }
    s->leaf_calls++;
    s->table[i] = (int32_t)x;
    return (int)x;
}

/* The moves worth trying, best guesses first (search.Search.ordered: of equivalent cards only the highest),
 * with `first` (a best move found before in this position) in front when it is one of them. */
static int ordered(const SearchObject *s, uint32_t moves, int seat, int k, int best, int best_seat, int first,
                   int8_t *out) {
    const CRules *r = &s->r;
    uint32_t live = s->h[0] | s->h[1] | s->h[2] | s->h[3] | s->trick_mask;
    int partner_winning = k > 0 && best_seat == (seat ^ 2);
    int keys[8];
    int n = 0;
    for (int su = 0; su < 4; su++) {
        unsigned m = moves >> (8 * su) & 255;
        if (!m) continue;
        unsigned l = live >> (8 * su) & 255;
        /* the moves among the suit's live cards in order of strength; a move right below another move of
         * the same points (no live card between them) is the same move */
        unsigned mc = pext8[r->by_strength[su][l]][r->by_strength[su][m]];
        unsigned kept = mc & ~(mc & mc << 1 & r->same_points[su][l]);
        while (kept) {
            int c = r->cards[su][l][__builtin_ctz(kept)];
            kept &= kept - 1;
            int key;
            if (k == 0)
                key = 64 - r->power[c] * 4 - (c >> 3 == r->trump ? 2 : 0);
            else if (partner_winning)
                key = 64 - r->points[c] * 2 + r->power[c];
            else if (beats(r, c, best))
                key = r->power[c] + (c >> 3 == r->trump && best >> 3 != r->trump ? 8 : 0);
            else
                key = 32 + r->points[c] * 2 + r->power[c];
            int x = key << 5 | c, j = n++;
            while (j > 0 && keys[j - 1] > x) {
                keys[j] = keys[j - 1];
                j--;
            }
            keys[j] = x;
        }
    }
    int at = 0, skip = -1;
    if (first >= 0) {
        for (int i = 0; i < n; i++)
            if ((keys[i] & 31) == first) {
                out[at++] = (int8_t)first;
                skip = i;
                break;
            }
    }
    for (int i = 0; i < n; i++)
        if (i != skip) out[at++] = (int8_t)(keys[i] & 31);
    return at;
}

static int after(SearchObject *s, int seat, int c, int k, int led, int best, int bs, int tpts, int alpha, int beta);
static int pprobe(SearchObject *s, int leader, int alpha, int beta);

/* The value with `seat` to play the `k`-th card of the trick (search.Search.play). */
static int play(SearchObject *s, int seat, int k, int led, int best, int bs, int tpts, int alpha, int beta,
                int first) {
    if (over_time(s)) return 0;
    uint32_t hand = s->h[seat];
    uint32_t moves = k == 0 ? hand : legal(&s->r, hand, seat, k, led, best, bs);
    int maximize = (seat & 1) == 0;
    int value = maximize ? -INF : INF;
    int8_t order[8];
    int n = ordered(s, moves, seat, k, best, bs, first, order);
    int best_card = order[0];
    for (int i = 0; i < n; i++) {
        int c = order[i];
        int v = after(s, seat, c, k, led, best, bs, tpts, alpha, beta);
        if (s->err) return 0;
        if (maximize) {
            if (v > value) {
                value = v;
                best_card = c;
                if (v > alpha) {
                    alpha = v;
                    if (alpha >= beta) break;
                }
            }
        } else if (v < value) {
            value = v;
            best_card = c;
            if (v < beta) {
                beta = v;
                if (alpha >= beta) break;
            }
        }
    }
    if (k == 0) s->best_lead = best_card;
    return value;
}

static SEntry *score_slot(SearchObject *s, uint64_t info, uint64_t bel, int *found) {
    TablesObject *t = s->tables;
    uint64_t hk = hash_hands(s->h, info ^ mix64(bel));
    SEntry *b = &t->st[(hk & (t->sbuckets - 1)) * SBUCKET];
    SEntry *victim = NULL;
    for (int i = 0; i < SBUCKET; i++) {
        SEntry *e = &b[i];
        if (e->epoch == s->sepoch && e->info == info && e->belote == bel && e->h[0] == s->h[0] &&
            e->h[1] == s->h[1] && e->h[2] == s->h[2] && e->h[3] == s->h[3]) {
            *found = 1;
            return e;
        }
        if (victim == NULL || (victim->epoch == s->sepoch && (e->epoch != s->sepoch || e->depth < victim->depth)))
            victim = e;
    }
    *found = 0;
    return victim;
}

/* A new trick led by `leader`, through the transposition table of bounds (search.Search.probe). */
static int probe(SearchObject *s, int leader, int alpha, int beta) {
    uint64_t info = (uint64_t)leader | (uint64_t)s->won << 2 | (uint64_t)s->cp0 << 4 | (uint64_t)s->bel0 << 16 |
                    (uint64_t)s->bel1 << 32;
    uint64_t bel = (uint64_t)s->pending << 32 | s->second;
    int found;
    s->tables->probes++;
    SEntry *e = score_slot(s, info, bel, &found);
    int lo = -INF, hi = INF, first = -1;
    if (found) {
        s->tables->hits++;
        lo = e->lo;
        hi = e->hi;
        first = e->best;
        if (lo >= beta) return lo;
        if (hi <= alpha) return hi;
        if (lo == hi) return lo;
        if (lo > alpha) alpha = lo;
        if (hi < beta) beta = hi;
    }
    int v = play(s, leader, 0, 0, 0, 0, 0, alpha, beta, first);
    if (s->err) return 0;
    if (v <= alpha) {
        if (v < hi) hi = v;
    } else if (v >= beta) {
        if (v > lo) lo = v;
    } else {
        lo = hi = v;
    }
    /* the slot may have been taken by the subtree meanwhile: look again */
    e = score_slot(s, info, bel, &found);
    if (found && (e->lo > lo || e->hi < hi)) { /* keep the tighter of the two (both are true bounds) */
        if (e->lo > lo) lo = e->lo;
        if (e->hi < hi) hi = e->hi;
    }
    memcpy(e->h, s->h, sizeof e->h);
    e->info = info;
    e->belote = bel;
    e->epoch = s->sepoch;
    e->lo = lo;
    e->hi = hi;
    e->best = (int8_t)s->best_lead;
    e->depth = (int8_t)s->tricks_left;
    s->tables->stores++;
    return v;
}

/* The score by side 0's final card points when the belotes still open cannot fail (and the score is
 * non-decreasing in the card points), else NULL (search.Search.sure_table). */
static const int32_t *sure_table(SearchObject *s) {
    const CRules *r = &s->r;
    uint32_t open = s->pending | s->second;
    int b0 = s->bel0, b1 = s->bel1;
    if (open) {
        if (r->in_line && r->mode == ALL_TRUMP) return NULL;
        for (int seat = 0; seat < 4; seat++) {
            int n = __builtin_popcount(s->h[seat] & s->second) + __builtin_popcount(s->h[seat] & s->pending) / 2;
            if (seat & 1)
                b1 += 20 * n;
            else
                b0 += 20 * n;
        }
    }
    if (b0 / 20 >= NBEL || b1 / 20 >= NBEL) return NULL;
    int slot = (b0 / 20) * NBEL + b1 / 20;
    int T = r->total_points;
    int32_t *tab = s->sure + (Py_ssize_t)slot * (T + 1);
    if (s->sure_state[slot] == 0) {
        /* only where side 0's card points can end from the root, the rest held at the nearest value (never
         * reached, but it keeps the table non-decreasing for the bisection) */
        int lo = s->cp_lo, hi = s->cp_hi, mono = 1;
        for (int cp = lo; cp <= hi; cp++) {
            tab[cp] = leaf_value(s, cp, 3, b0, b1);
            if (s->err) return NULL;
            if (cp > lo && tab[cp] < tab[cp - 1]) mono = 0;
        }
        for (int cp = 0; cp < lo; cp++) tab[cp] = tab[lo];
        for (int cp = hi + 1; cp <= T; cp++) tab[cp] = tab[hi];
        s->sure_state[slot] = mono ? 1 : 2;
    }
    return s->sure_state[slot] == 1 ? tab : NULL;
}

/* The score of the rest from a trick led by `leader`, searched for card points in the window of points that
 * `table` maps into (alpha, beta) (search.Search.points_value). */
static int points_value(SearchObject *s, const int32_t *table, int leader, int alpha, int beta) {
    int base = s->cp0, top = s->r.total_points - base;
    int lo = -1, hi = top;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (table[base + mid] <= alpha)
            lo = mid;
        else
            hi = mid - 1;
    }
    int pa = lo;
    lo = 0;
    hi = top + 1;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (table[base + mid] >= beta)
            hi = mid;
        else
            lo = mid + 1;
    }
    int pb = lo;
    int p = pprobe(s, leader, pa, pb);
    if (s->err) return 0;
    if (p < 0)
        p = 0;
    else if (p > top)
        p = top;
    return table[base + p];
}

static int end_trick(SearchObject *s, int winner, int tpts, int alpha, int beta) {
    int side = winner & 1;
    int saved_cp0 = s->cp0, saved_won = s->won, v;
    if (side == 0) s->cp0 += tpts;
    s->won |= 1 << side;
    s->tricks_left--;
    if (s->tricks_left == 0) {
        if (side == 0) s->cp0 += s->r.last_bonus;
        v = leaf_value(s, s->cp0, s->won, s->bel0, s->bel1);
    } else if (s->won == 3 && s->use_points) {
        const int32_t *table = sure_table(s);
        if (s->err)
            v = 0;
        else
            v = table ? points_value(s, table, winner, alpha, beta) : probe(s, winner, alpha, beta);
    } else {
        v = probe(s, winner, alpha, beta);
    }
    s->tricks_left++;
    s->cp0 = saved_cp0;
    s->won = saved_won;
    return v;
}

/* The value after `seat` plays card `c` (search.Search.after). */
static int after(SearchObject *s, int seat, int c, int k, int led, int best, int bs, int tpts, int alpha, int beta) {
    const CRules *r = &s->r;
    uint32_t bit = 1u << c;
    uint32_t hand = s->h[seat];
    s->h[seat] = hand ^ bit;
    uint32_t saved_pending = s->pending, saved_second = s->second;
    int saved_bel0 = s->bel0, saved_bel1 = s->bel1;
    if (bit & (s->pending | s->second)) {
        int in_line = !r->in_line || k == 0 || c >> 3 == led || c >> 3 == r->trump;
        if (s->pending & bit) {
            uint32_t pair = bit | 1u << (c ^ 3); /* the king (rank 6) and queen (rank 5) differ in these bits */
            s->pending &= ~pair;
            if (in_line) s->second |= 1u << (c ^ 3);
        } else {
            s->second &= ~bit;
            if (in_line) {
                if (seat & 1)
                    s->bel1 += 20;
                else
                    s->bel0 += 20;
            }
        }
    }
    if (k == 0) {
        led = c >> 3;
        best = c;
        bs = seat;
    } else if (beats(r, c, best)) {
        best = c;
        bs = seat;
    }
    tpts += r->points[c];
    int v;
    if (k == 3) {
        uint32_t saved_mask = s->trick_mask;
        s->trick_mask = 0;
        v = end_trick(s, bs, tpts, alpha, beta);
        s->trick_mask = saved_mask;
    } else {
        s->trick_mask |= bit;
        v = play(s, (seat + 1) & 3, k + 1, led, best, bs, tpts, alpha, beta, -1);
        s->trick_mask &= ~bit;
    }
    s->h[seat] = hand;
    s->pending = saved_pending;
    s->second = saved_second;
    s->bel0 = saved_bel0;
    s->bel1 = saved_bel1;
    return v;
}

/* --- The card-points search ------------------------------------------------------------------------------------ */
static int pplay(SearchObject *s, int seat, int k, int led, int best, int bs, int tpts, int alpha, int beta,
                 int first);

static PEntry *points_slot(SearchObject *s, int leader, int *found) {
    TablesObject *t = s->tables;
    uint64_t hk = hash_hands(s->h, (uint64_t)leader + 0x9e3779b97f4a7c15ULL);
    PEntry *b = &t->pt[(hk & (t->pbuckets - 1)) * PBUCKET];
    PEntry *victim = NULL;
    for (int i = 0; i < PBUCKET; i++) {
        PEntry *e = &b[i];
        if (e->epoch == s->pepoch && e->leader == leader && e->h[0] == s->h[0] && e->h[1] == s->h[1] &&
            e->h[2] == s->h[2] && e->h[3] == s->h[3]) {
            *found = 1;
            return e;
        }
        if (victim == NULL || (victim->epoch == s->pepoch && (e->epoch != s->pepoch || e->depth < victim->depth)))
            victim = e;
    }
    *found = 0;
    return victim;
}

/* Side 0's card points from a trick led by `leader` to the end, last trick included (search.Search.pprobe). */
static int pprobe(SearchObject *s, int leader, int alpha, int beta) {
    int left = points_of(&s->r, s->h[0] | s->h[1] | s->h[2] | s->h[3]) + s->r.last_bonus;
    if (left <= alpha) return left;
    if (beta <= 0) return 0;
    if (s->tricks_left == 1) {
        /* the last trick: one card in each hand, nothing to choose (its four positions counted as nodes,
         * as the reference visits them) */
        s->nodes += 4;
        int best = __builtin_ctz(s->h[leader]), bs = leader;
        for (int i = 1; i < 4; i++) {
            int seat = (leader + i) & 3, c = __builtin_ctz(s->h[seat]);
            if (beats(&s->r, c, best)) {
                best = c;
                bs = seat;
            }
        }
        return (bs & 1) == 0 ? left : 0;
    }
    int found;
    s->tables->probes++;
    PEntry *e = points_slot(s, leader, &found);
    int lo = 0, hi = left, first = -1;
    if (found) {
        s->tables->hits++;
        lo = e->lo;
        hi = e->hi;
        first = e->best;
        if (lo >= beta) return lo;
        if (hi <= alpha) return hi;
        if (lo == hi) return lo;
    }
    if (lo > alpha) alpha = lo;
    if (hi < beta) beta = hi;
    int v = pplay(s, leader, 0, 0, 0, 0, 0, alpha, beta, first);
    if (s->err) return 0;
    if (v <= alpha) {
        if (v < hi) hi = v;
    } else if (v >= beta) {
        if (v > lo) lo = v;
    } else {
        lo = hi = v;
    }
    e = points_slot(s, leader, &found);
    if (found) {
        if (e->lo > lo) lo = e->lo;
        if (e->hi < hi) hi = e->hi;
    }
    memcpy(e->h, s->h, sizeof e->h);
    e->epoch = s->pepoch;
    e->leader = (int8_t)leader;
    e->lo = (int16_t)lo;
    e->hi = (int16_t)hi;
    e->best = (int8_t)s->best_lead;
    e->depth = (int8_t)s->tricks_left;
    s->tables->stores++;
    return v;
}

/* Side 0's card points from this trick's start to the end after `seat` plays card `c` (the move is made and
 * unmade here; search.Search.pplay's loop). */
static inline int pafter(SearchObject *s, int seat, int c, int k, int led, int best, int bs, int tpts, int alpha,
                         int beta) {
    const CRules *r = &s->r;
    uint32_t bit = 1u << c;
    uint32_t hand = s->h[seat];
    s->h[seat] = hand ^ bit;
    if (k == 0) {
        led = c >> 3;
        best = c;
        bs = seat;
    } else if (beats(r, c, best)) {
        best = c;
        bs = seat;
    }
    int npts = tpts + r->points[c], v;
    if (k == 3) {
        int gain = (bs & 1) == 0 ? npts : 0;
        s->tricks_left--;
        if (s->tricks_left == 0) {
            v = gain + ((bs & 1) == 0 ? r->last_bonus : 0);
        } else {
            uint32_t saved_mask = s->trick_mask;
            s->trick_mask = 0;
            v = gain + pprobe(s, bs, alpha - gain, beta - gain);
            s->trick_mask = saved_mask;
        }
        s->tricks_left++;
    } else {
        s->trick_mask |= bit;
        v = pplay(s, (seat + 1) & 3, k + 1, led, best, bs, npts, alpha, beta, -1);
        s->trick_mask &= ~bit;
    }
    s->h[seat] = hand;
    return v;
}

/* `play` for card points: side 0's points from this trick's start to the end (search.Search.pplay). */
static int pplay(SearchObject *s, int seat, int k, int led, int best, int bs, int tpts, int alpha, int beta,
                 int first) {
    if (over_time(s)) return 0;
    uint32_t hand = s->h[seat];
    uint32_t moves = k == 0 ? hand : legal(&s->r, hand, seat, k, led, best, bs);
    int maximize = (seat & 1) == 0;
    int value = maximize ? -INF : INF;
    int8_t order[8];
    int n = ordered(s, moves, seat, k, best, bs, first, order);
    int best_card = order[0];
    for (int i = 0; i < n; i++) {
        int c = order[i];
        int v = pafter(s, seat, c, k, led, best, bs, tpts, alpha, beta);
        if (s->err) return 0;
        if (maximize) {
            if (v > value) {
                value = v;
                best_card = c;
                if (v > alpha) {
                    alpha = v;
                    if (alpha >= beta) break;
                }
            }
        } else if (v < value) {
            value = v;
            best_card = c;
            if (v < beta) {
                beta = v;
                if (alpha >= beta) break;
            }
        }
    }
    if (k == 0) s->best_lead = best_card;
    return value;
}

/* --- The Python side of Search ------------------------------------------------------------------------------------- */
static void Search_dealloc(SearchObject *s) {
    if (s->has_view) PyBuffer_Release(&s->view);
    if (s->table_obj == NULL) PyMem_Free(s->table);
    PyMem_Free(s->sure);
    Py_XDECREF(s->table_obj);
    Py_XDECREF(s->leaf);
    Py_XDECREF(s->tables);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Search_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"rules", "leaf", "deadline", "table", "tables", NULL};
    PyObject *rules, *leaf, *table = Py_None, *tables = Py_None;
    double deadline = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|dOO", names, &rules, &leaf, &deadline, &table, &tables))
        return NULL;
    if (leaf != Py_None && !PyCallable_Check(leaf)) {
        PyErr_SetString(PyExc_TypeError, "leaf: a callable (cp0, won, bel0, bel1) -> int, or None");
        return NULL;
    }
    if (tables != Py_None && !PyObject_TypeCheck(tables, &TablesType)) {
        PyErr_SetString(PyExc_TypeError, "tables: a pimc_csearch.Tables or None");
        return NULL;
    }
    SearchObject *s = (SearchObject *)type->tp_alloc(type, 0);
    if (s == NULL) return NULL;
    if (rules_from(rules, &s->r) < 0) goto fail;
    Py_INCREF(leaf);
    s->leaf = leaf;
    Py_ssize_t n = table_len(&s->r);
    if (table != Py_None) {
        if (PyObject_GetBuffer(table, &s->view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) goto fail;
        s->has_view = 1;
        if (s->view.itemsize != 4 || s->view.format == NULL || (strcmp(s->view.format, "i") != 0 &&
                                                                 strcmp(s->view.format, "=i") != 0)) {
            PyErr_SetString(PyExc_TypeError, "table: an array('i') of 4-byte ints");
            goto fail;
        }
        if (s->view.len / 4 != n) {
            PyErr_Format(PyExc_ValueError, "table: %zd entries expected (4 * %d * %d * (total points + 1)), not %zd",
                         n, NBEL, NBEL, s->view.len / 4);
            goto fail;
        }
        Py_INCREF(table);
        s->table_obj = table;
        s->table = (int32_t *)s->view.buf;
    } else {
        if (leaf == Py_None) {
            PyErr_SetString(PyExc_ValueError, "a leaf table or a leaf callable is needed");
            goto fail;
        }
        s->table = PyMem_Malloc((size_t)n * sizeof(int32_t));
        if (s->table == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < n; i++) s->table[i] = MISSING;
    }
    s->sure = PyMem_Malloc((size_t)NBEL * NBEL * (s->r.total_points + 1) * sizeof(int32_t));
    if (s->sure == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    TablesObject *t = tables == Py_None ? default_tables : (TablesObject *)tables;
    Py_INCREF(t);
    s->tables = t;
    if (tables == Py_None || s->table_obj == NULL) {
        /* a search of its own (or a callback with a private table, whose values another search never sees) */
        s->sepoch = fresh_epoch(t);
    } else {
        s->sepoch = tables_epoch(t, t->ssig, &s->r, s->table_obj, NULL);
    }
    s->pepoch = tables == Py_None ? fresh_epoch(t) : tables_epoch(t, t->psig, &s->r, NULL, NULL);
    s->deadline = deadline;
    s->use_points = 1;
    s->tricks_left = 8;
    s->cp_hi = s->r.total_points;
    return (PyObject *)s;
fail:
    Py_DECREF(s);
    return NULL;
}

static int read_hands(PyObject *seq_obj, uint32_t *h) {
    PyObject *seq = PySequence_Fast(seq_obj, "hands: four masks");
    if (seq == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 4) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "hands: four masks");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        unsigned long long x = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (PyErr_Occurred() || x >> 32) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "hands: 32-bit masks");
            return -1;
        }
        h[i] = (uint32_t)x;
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *Search_set_position(SearchObject *s, PyObject *args) {
    PyObject *hands;
    int tricks_left, cp0, won, bel0, bel1;
    unsigned long long pending, second;
    if (!PyArg_ParseTuple(args, "OiiiiiKK", &hands, &tricks_left, &cp0, &won, &bel0, &bel1, &pending, &second))
        return NULL;
    if (read_hands(hands, s->h) < 0) return NULL;
    if (tricks_left < 0 || tricks_left > 8 || cp0 < 0 || cp0 > s->r.total_points || won < 0 || won > 3 ||
        bel0 < 0 || bel1 < 0 || bel0 / 20 >= NBEL || bel1 / 20 >= NBEL || pending >> 32 || second >> 32) {
        PyErr_SetString(PyExc_ValueError, "set_position: a value out of range");
        return NULL;
    }
    s->tricks_left = tricks_left;
    s->cp0 = cp0;
    s->won = won;
    s->bel0 = bel0;
    s->bel1 = bel1;
    s->pending = (uint32_t)pending;
    s->second = (uint32_t)second;
    Py_RETURN_NONE;
}

typedef struct {
    int k, led, best, best_seat, tpts;
} Trick;

/* search.Search.enter_trick: mark the trick's cards played, and its state. */
static int enter_trick(SearchObject *s, PyObject *trick_obj, int leader, Trick *t) {
    PyObject *seq = PySequence_Fast(trick_obj, "trick: a list of cards");
    if (seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > 3 || leader < 0 || leader > 3) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "trick: at most three cards, a leader 0..3");
        return -1;
    }
    memset(t, 0, sizeof *t);
    t->k = (int)n;
    t->best_seat = leader;
    uint32_t mask = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        long c = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if ((c == -1 && PyErr_Occurred()) || c < 0 || c > 31) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "trick: cards 0..31");
            return -1;
        }
        mask |= 1u << c;
        t->tpts += s->r.points[c];
        if (i == 0) {
            t->led = (int)c >> 3;
            t->best = (int)c;
        } else if (beats(&s->r, (int)c, t->best)) {
            t->best = (int)c;
            t->best_seat = (leader + (int)i) & 3;
        }
    }
    Py_DECREF(seq);
    s->trick_mask = mask;
    /* The search generates only legal positions from a consistent one (and its buffers hold a hand of eight):
     * the hands disjoint, the trick's cards in none, each seat holding the tricks left, less one if it has
     * played to this trick. */
    uint32_t seen = mask;
    int ok = __builtin_popcount(mask) == t->k && s->tricks_left >= 1 && s->tricks_left <= 8;
    for (int i = 0; i < 4 && ok; i++) {
        int played = ((i - leader) & 3) < t->k;
        ok = !(s->h[i] & seen) && __builtin_popcount(s->h[i]) == s->tricks_left - played;
        seen |= s->h[i];
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "not a position of the card play: hands, trick and tricks left disagree");
        return -1;
    }
    return 0;
}

static PyObject *raise_err(SearchObject *s) {
    int e = s->err;
    s->err = OK;
    if (e == TIMEOUT) PyErr_SetNone(SearchTimeout);
    return NULL; /* PYERROR: the exception is set */
}

/* search.Search.equivalent_of: the card kept by `ordered` in place of `card`. */
static int equivalent_of(SearchObject *s, int card, uint32_t moves) {
    const CRules *r = &s->r;
    uint32_t live = s->h[0] | s->h[1] | s->h[2] | s->h[3] | s->trick_mask;
    const int8_t *suit = r->by_power[card >> 3];
    int i = 0;
    while (suit[i] != card) i++;
    while (i > 0) {
        i--;
        int x = suit[i];
        if (live >> x & 1) {
            if (moves >> x & 1 && r->points[x] == r->points[card])
                card = x;
            else
                break;
        }
    }
    return card;
}

/* Whether the leaf table is the card points alone (every entry side 0's final card points, whatever the
 * tricks and belotes): then the card-point search gives every value from the root. */
static int cp_only_table(const SearchObject *s) {
    int T = s->r.total_points;
    const int32_t *tab = s->table;
    for (int row = 0; row < 4 * NBEL * NBEL; row++, tab += T + 1)
        for (int cp = 0; cp <= T; cp++)
            if (tab[cp] != cp) return 0;
    return 1;
}

static PyObject *Search_root_values(SearchObject *s, PyObject *args) {
    int seat, leader;
    PyObject *trick;
    if (!PyArg_ParseTuple(args, "iOi", &seat, &trick, &leader)) return NULL;
    if (seat < 0 || seat > 3) {
        PyErr_SetString(PyExc_ValueError, "seat 0..3");
        return NULL;
    }
    Trick t;
    if (enter_trick(s, trick, leader, &t) < 0) return NULL;
    if (seat != ((leader + t.k) & 3)) {
        PyErr_SetString(PyExc_ValueError, "the seat to play is the leader's k-th successor");
        return NULL;
    }
    /* search.Search.set_range: the sure tables are built over this range */
    uint32_t all = s->h[0] | s->h[1] | s->h[2] | s->h[3];
    int left = points_of(&s->r, all) + s->r.last_bonus + t.tpts;
    int lo = s->cp0, hi = s->cp0 + left < s->r.total_points ? s->cp0 + left : s->r.total_points;
    if (lo != s->cp_lo || hi != s->cp_hi) memset(s->sure_state, 0, sizeof s->sure_state);
    s->cp_lo = lo;
    s->cp_hi = hi;
    uint32_t moves = legal(&s->r, s->h[seat], seat, t.k, t.led, t.best, t.best_seat);
    int8_t order[8];
    int n = ordered(s, moves, seat, t.k, t.best, t.best_seat, -1, order);
    int vals[32];
    for (int c = 0; c < 32; c++) vals[c] = INF; /* not searched */
    int have = 0, guess = 0;
    int cp_only = s->use_points && cp_only_table(s);
    for (int i = 0; i < n; i++) {
        int c = order[i], v;
        if (cp_only) {
            /* the card points alone: the card-point search from the root, by zero windows */
            int lo = 0, hi = left, g = have ? guess - s->cp0 : (left + 1) / 2;
            while (lo < hi && !s->err) {
                int b = g <= lo ? lo + 1 : g > hi ? hi : g;
                g = pafter(s, seat, c, t.k, t.led, t.best, t.best_seat, t.tpts, b - 1, b);
                if (g < b)
                    hi = g;
                else
                    lo = g;
            }
            v = s->cp0 + lo;
        } else if (!have) {
            v = after(s, seat, c, t.k, t.led, t.best, t.best_seat, t.tpts, -INF, INF);
        } else {
            /* MTD(f): zero windows from the best value so far, each a bound that narrows [lo, hi] */
            int lo = -INF, hi = INF, g = guess;
            while (lo < hi && !s->err) {
                int b = g == lo ? g + 1 : g;
                g = after(s, seat, c, t.k, t.led, t.best, t.best_seat, t.tpts, b - 1, b);
                if (g < b)
                    hi = g;
                else
                    lo = g;
            }
            v = g;
        }
        if (s->err) return raise_err(s);
        vals[c] = v;
        if (!have || ((seat & 1) == 0 ? v > guess : v < guess)) guess = v;
        have = 1;
    }
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    for (int c = 0; c < 32; c++) {
        if (!(moves >> c & 1)) continue;
        int v = vals[c] != INF ? vals[c] : vals[equivalent_of(s, c, moves)];
        PyObject *key = PyLong_FromLong(c), *val = PyLong_FromLong(v);
        if (key == NULL || val == NULL || PyDict_SetItem(out, key, val) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(val);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(key);
        Py_DECREF(val);
    }
    return out;
}

static PyObject *Search_points_root(SearchObject *s, PyObject *args) {
    int seat, leader, resolution = 0;
    PyObject *trick;
    if (!PyArg_ParseTuple(args, "iOi|i", &seat, &trick, &leader, &resolution)) return NULL;
    if (seat < 0 || seat > 3) {
        PyErr_SetString(PyExc_ValueError, "seat 0..3");
        return NULL;
    }
    Trick t;
    if (enter_trick(s, trick, leader, &t) < 0) return NULL;
    if (seat != ((leader + t.k) & 3)) {
        PyErr_SetString(PyExc_ValueError, "the seat to play is the leader's k-th successor");
        return NULL;
    }
    uint32_t all = s->h[0] | s->h[1] | s->h[2] | s->h[3];
    int lo = 0, hi = points_of(&s->r, all) + s->r.last_bonus + t.tpts;
    while (hi - lo > resolution) {
        int target = (lo + hi + 1) >> 1;
        int g = pplay(s, seat, t.k, t.led, t.best, t.best_seat, t.tpts, target - 1, target, -1);
        if (s->err) return raise_err(s);
        if (g >= target)
            lo = g;
        else
            hi = g;
    }
    return PyLong_FromLong(s->cp0 + lo);
}

static PyMethodDef Search_methods[] = {
    {"set_position", (PyCFunction)Search_set_position, METH_VARARGS,
     "set_position(hands, tricks_left, cp0, won, bel0, bel1, pending, second)"},
    {"root_values", (PyCFunction)Search_root_values, METH_VARARGS,
     "root_values(seat, trick, leader) -> {card: value}: each legal card's exact value (side 0's)"},
    {"points_root", (PyCFunction)Search_points_root, METH_VARARGS,
     "points_root(seat, trick, leader, resolution=0) -> side 0's final card points, both sides playing for them"},
    {NULL, NULL, 0, NULL}};

static PyObject *Search_get_nodes(SearchObject *s, void *c) {
    (void)c;
    return PyLong_FromLongLong(s->nodes);
}
static PyObject *Search_get_leaf_calls(SearchObject *s, void *c) {
    (void)c;
    return PyLong_FromLongLong(s->leaf_calls);
}
static PyObject *Search_get_use_points(SearchObject *s, void *c) {
    (void)c;
    return PyBool_FromLong(s->use_points);
}
static int Search_set_use_points(SearchObject *s, PyObject *v, void *c) {
    (void)c;
    int t = v == NULL ? -1 : PyObject_IsTrue(v);
    if (t < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "use_points cannot be deleted");
        return -1;
    }
    s->use_points = t;
    return 0;
}
static PyObject *Search_get_deadline(SearchObject *s, void *c) {
    (void)c;
    return PyFloat_FromDouble(s->deadline);
}
static int Search_set_deadline(SearchObject *s, PyObject *v, void *c) {
    (void)c;
    double d = v == NULL ? -1.0 : PyFloat_AsDouble(v);
    if (d == -1.0 && (v == NULL || PyErr_Occurred())) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "deadline cannot be deleted");
        return -1;
    }
    s->deadline = d;
    return 0;
}

static PyGetSetDef Search_getset[] = {
    {"nodes", (getter)Search_get_nodes, NULL, "nodes visited", NULL},
    {"leaf_calls", (getter)Search_get_leaf_calls, NULL, "leaf values asked of the leaf callable", NULL},
    {"use_points", (getter)Search_get_use_points, (setter)Search_set_use_points,
     "whether the card-point search takes over once the score is a function of the card points", NULL},
    {"deadline", (getter)Search_get_deadline, (setter)Search_set_deadline, "a time.perf_counter() instant, or 0",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SearchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pimc_csearch.Search",
    .tp_basicsize = sizeof(SearchObject),
    .tp_dealloc = (destructor)Search_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Search(rules, leaf, deadline=0.0, table=None, tables=None): search.Search in C. `table`: an "
              "array('i') of 4 * 5 * 5 * (total points + 1) leaf values (MISSING where unknown, asked of `leaf` "
              "then); `tables`: a Tables to share (else a fresh epoch of the module's own).",
    .tp_methods = Search_methods,
    .tp_getset = Search_getset,
    .tp_new = Search_new,
};

static PyObject *mod_clock(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyFloat_FromDouble(now_s());
}

static PyMethodDef module_methods[] = {
    {"clock", mod_clock, METH_NOARGS, "The clock the deadline is compared with (time.perf_counter's)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pimc_csearch", "The PIMC bot's double-dummy search in C (see ckernel.c).", -1,
    module_methods};

PyMODINIT_FUNC PyInit_pimc_csearch(void) {
    if (PyType_Ready(&TablesType) < 0 || PyType_Ready(&SearchType) < 0) return NULL;
    init_pext8();
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    SearchTimeout = PyErr_NewExceptionWithDoc("pimc_csearch.SearchTimeout",
                                              "The search ran past its deadline; its partial result is thrown away.",
                                              NULL, NULL);
    if (SearchTimeout == NULL) return NULL;
    Py_INCREF(SearchTimeout);
    PyModule_AddObject(m, "SearchTimeout", SearchTimeout);
    Py_INCREF(&TablesType);
    PyModule_AddObject(m, "Tables", (PyObject *)&TablesType);
    Py_INCREF(&SearchType);
    PyModule_AddObject(m, "Search", (PyObject *)&SearchType);
    default_tables = (TablesObject *)PyObject_CallObject((PyObject *)&TablesType, NULL);
    if (default_tables == NULL) return NULL;
    PyModule_AddObject(m, "MISSING", PyLong_FromLong(MISSING));
    PyModule_AddObject(m, "BELOTE_STEPS", PyLong_FromLong(NBEL));
    Py_INCREF(default_tables);
    PyModule_AddObject(m, "default_tables", (PyObject *)default_tables);
    return m;
}
