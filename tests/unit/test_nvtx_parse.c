/*
 * test_nvtx_parse.c — the NVTX collector's pure helpers: PyTorch emit_nvtx messages into
 * operator name + input shapes, NVTX category names into tally categories, UTF-32 to UTF-8,
 * and the launcher's rank.
 */
#include "collect/collect.h"
#include "testlib.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <tally.h>

static int parse(const char *msg, char *name, char *shapes)
{
    size_t nl = 0, sl = 0;
    const char *sp = NULL;
    int r = tally__nvtx_parse_op(msg, strlen(msg), &nl, &sp, &sl);
    name[0] = shapes[0] = 0;
    if (r) {
        memcpy(name, msg, nl);
        name[nl] = 0;
        if (sp) {
            memcpy(shapes, sp, sl);
            shapes[sl] = 0;
        }
    }
    return r;
}

TEST(emit_nvtx_with_shapes)
{
    char n[128], s[128];
    CHECK_EQ_INT(parse("aten::mm, seq = 3, op_id = 7, sizes = [[2, 3], [3, 4]]", n, s), 1);
    CHECK_STR(n, "aten::mm");
    CHECK_STR(s, "[[2, 3], [3, 4]]");
}

TEST(emit_nvtx_with_input_op_ids)
{
    char n[128], s[256];
    CHECK_EQ_INT(parse("aten::addmm, seq = 5, op_id = 9, sizes = [[64], [32, 128], [128, 64], [], "
                       "[]], input_op_ids = [(0,-1), (3,0), (7,0), (0,-1), (0,-1)]",
                       n, s),
                 1);
    CHECK_STR(n, "aten::addmm");
    CHECK_STR(s, "[[64], [32, 128], [128, 64], [], []]");
}

TEST(emit_nvtx_without_shapes)
{
    char n[128], s[128];
    CHECK_EQ_INT(parse("aten::relu, seq = 12, op_id = 34", n, s), 1);
    CHECK_STR(n, "aten::relu");
    CHECK_STR(s, "");
    CHECK_EQ_INT(parse("MmBackward0, seq = 12, op_id = 40", n, s), 1);
    CHECK_STR(n, "MmBackward0");
    CHECK_EQ_INT(parse("aten::empty, seq = -1, op_id = 2", n, s), 1);
    CHECK_STR(n, "aten::empty");
}

TEST(user_ranges_are_not_operators)
{
    char n[128], s[128];
    CHECK_EQ_INT(parse("forward", n, s), 0);
    CHECK_EQ_INT(parse("step 0", n, s), 0);
    CHECK_EQ_INT(parse("a, b, c", n, s), 0);
    CHECK_EQ_INT(parse("x, seq = many", n, s), 0);        /* not a number */
    CHECK_EQ_INT(parse("x, sizes = [[1, 2]", n, s), 0);   /* unbalanced */
    CHECK_EQ_INT(parse("x, sizes = [[1, 2]]", n, s), 0);  /* no seq or op_id */
    CHECK_EQ_INT(parse(", seq = 1, op_id = 2", n, s), 0); /* no name */
    CHECK_EQ_INT(parse("x, seq = 1, op_id = 2, extra", n, s), 0);
}

TEST(categories)
{
    CHECK_EQ_INT(tally__nvtx_category_from_name("forward"), TALLY_FORWARD);
    CHECK_EQ_INT(tally__nvtx_category_from_name("Backward"), TALLY_BACKWARD);
    CHECK_EQ_INT(tally__nvtx_category_from_name("OPTIMIZER"), TALLY_OPTIMIZER);
    CHECK_EQ_INT(tally__nvtx_category_from_name("dataloader"), TALLY_DATALOADER);
    CHECK_EQ_INT(tally__nvtx_category_from_name("communication"), TALLY_COMMUNICATION);
    CHECK_EQ_INT(tally__nvtx_category_from_name("operator"), TALLY_OPERATOR);
    CHECK_EQ_INT(tally__nvtx_category_from_name("my cat"), -1);
    CHECK_EQ_INT(tally__nvtx_category_from_name(NULL), -1);
}

TEST(utf32_to_utf8)
{
    char out[64];
    /* "wide é", U+20AC, U+1F600 */
    const wchar_t w[] = {L'w', L'i', L'd', L'e', L' ', 0xE9, L' ', 0x20AC, 0x1F600, 0};
    size_t n = tally__utf32_to_utf8(w, out, sizeof out);
    CHECK_STR(out, "wide \xC3\xA9 \xE2\x82\xAC\xF0\x9F\x98\x80");
    CHECK_EQ_INT(n, strlen(out));
    /* truncation on a character boundary: "ab" + "é" needs 4 bytes + NUL */
    const wchar_t w2[] = {L'a', L'b', 0xE9, 0};
    CHECK_EQ_INT(tally__utf32_to_utf8(w2, out, 4), 2);
    CHECK_STR(out, "ab");
    /* surrogates and out-of-range code points become U+FFFD */
    const wchar_t w3[] = {0xD800, (wchar_t)0x110000, 0};
    tally__utf32_to_utf8(w3, out, sizeof out);
    CHECK_STR(out, "\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK_EQ_INT(tally__utf32_to_utf8(NULL, out, sizeof out), 0);
    CHECK_STR(out, "");
}

TEST(rank_from_environment)
{
    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("PMI_RANK");
    CHECK_EQ_INT(tally__env_rank(), -1);
    setenv("SLURM_PROCID", "5", 1);
    CHECK_EQ_INT(tally__env_rank(), 5);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    CHECK_EQ_INT(tally__env_rank(), 3);
    setenv("RANK", "1", 1);
    CHECK_EQ_INT(tally__env_rank(), 1);
    setenv("RANK", "x", 1); /* malformed: the next variable decides */
    CHECK_EQ_INT(tally__env_rank(), 3);
    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
}

int main(void)
{
    RUN(emit_nvtx_with_shapes);
    RUN(emit_nvtx_with_input_op_ids);
    RUN(emit_nvtx_without_shapes);
    RUN(user_ranges_are_not_operators);
    RUN(categories);
    RUN(utf32_to_utf8);
    RUN(rank_from_environment);
    return test_summary();
}
