/* stories.h - the fixture of the unit tests that run the real stories260k
 * model (examples/models/stories260k: a 260K-parameter Llama, tied
 * embeddings): the model loaded once per test program (setup, teardown for
 * cmocka_run_group_tests) and the ids greedy decoding from BOS must give,
 * those of llama2.c's run.c at temperature 0 (issue 3; they decode to "Once
 * upon a time, there was a little girl named Lily. She loved to play
 * outside in the park. One day, she saw a big, r").  Included by
 * test_stories.c, test_gen.c and test_probe.c, each its own program. */
#ifndef SS_TEST_STORIES_H
#define SS_TEST_STORIES_H

#include <stdio.h>
#include <stdlib.h>

#include "engine/model.h"

static const int32_t expect[] = {
	1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396,
	267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261,
	370, 432, 352};
#define NEXP ((long)(sizeof expect / sizeof expect[0]))

static ss_model M;
static char dir[4096]; /* the model folder, under $SS_ROOT (default .) */

static int setup(void **st)
{
	(void)st;
	const char *root = getenv("SS_ROOT");
	snprintf(dir, sizeof dir, "%s/examples/models/stories260k", root ? root : ".");
	ss_err e = {0};
	if (model_load(&M, dir, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	model_free(&M);
	return 0;
}

#endif
