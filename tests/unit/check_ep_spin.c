/* SPDX-License-Identifier: MIT */
/*
 * endpoint/ep_spin.h, how a CQ learns how long its waiters spin: answers
 * caught spinning leave the window alone; answers that came soon after the
 * spin (a wake-up was paid) grow it to cover them, up to the cap; answers
 * later than the cap, or none, halve it down to no spin at all; a window of
 * no spin comes back when answers come quickly again.  The rule is what
 * makes the spin fit a machine whose wake-ups cost 3 us and one whose cost
 * 60 us alike, so the sequences below are a machine of each kind.
 */
#include "config.h"

#include <check.h>

#include "endpoint/ep_spin.h"
#include "tests/unit/testutil.h"

#define CAP EP_SPIN_CAP_US

START_TEST(caught_keeps_the_window)
{
	ck_assert_int_eq(ep_spin_next(50, 3, true, CAP), 50);
	ck_assert_int_eq(ep_spin_next(200, 150, true, CAP), 200);
	ck_assert_int_eq(ep_spin_next(0, 0, true, CAP), 0);
}
END_TEST

START_TEST(a_wake_up_paid_grows_it)
{
	/* Twice the window, or 5/4 of the wait when that is more; never past the cap. */
	ck_assert_int_eq(ep_spin_next(50, 60, false, CAP), 100);
	ck_assert_int_eq(ep_spin_next(50, 120, false, CAP), 150);
	ck_assert_int_eq(ep_spin_next(150, 190, false, CAP), CAP);
	ck_assert_int_eq(ep_spin_next(CAP, CAP, false, CAP), CAP);
	/* From no spin: at least the smallest window worth one. */
	ck_assert_int_eq(ep_spin_next(0, 4, false, CAP), EP_SPIN_START_US);
}
END_TEST

START_TEST(late_answers_halve_it_to_nothing)
{
	int w = EP_SPIN_FIRST_US, n = 0;

	while (w && n < 32) {
		int nw = ep_spin_next(w, CAP + 1, false, CAP);

		ck_assert_int_lt(nw, w);
		w = nw;
		n++;
	}
	ck_assert_int_eq(w, 0);
	ck_assert_int_le(n, 4); /* 50, 25, 12, then none: a few idle waits, not hundreds */
	ck_assert_int_eq(ep_spin_next(0, INT64_MAX, false, CAP), 0);
}
END_TEST

/*
 * A peer that answers |answer| us after the wait began; a waiter whose own
 * wake-up costs |wake| us.  Returns the window after |rounds| waits.
 */
static int settle(int w, int answer, int wake, int rounds, int *sleeps_late)
{
	*sleeps_late = 0;
	for (int i = 0; i < rounds; i++) {
		bool caught = answer <= w;

		if (!caught && i >= rounds / 2)
			(*sleeps_late)++;
		w = ep_spin_next(w, caught ? answer : answer + wake, caught, CAP);
	}
	return w;
}

START_TEST(it_fits_the_machine)
{
	int late;

	/* Cross-CPU wake-ups of 60 us, answers at 70 us: a fixed 50 us would never catch one. */
	ck_assert_int_ge(settle(EP_SPIN_FIRST_US, 70, 60, 20, &late), 70);
	ck_assert_int_eq(late, 0);
	/* Answers at 3 us (one CPU, or a quick peer): the first window catches them all. */
	ck_assert_int_eq(settle(EP_SPIN_FIRST_US, 3, 5, 20, &late), EP_SPIN_FIRST_US);
	/* A server that thinks 1 ms: spinning stops. */
	ck_assert_int_eq(settle(EP_SPIN_FIRST_US, 1000, 5, 20, &late), 0);
	/* ... and comes back when the answers come quickly again. */
	ck_assert_int_ge(settle(0, 40, 30, 20, &late), 40);
	ck_assert_int_eq(late, 0);
	/* Answers past the cap stay out of reach whatever the wake-up costs. */
	ck_assert_int_eq(settle(CAP, CAP + 50, 60, 20, &late), 0);
}
END_TEST

START_TEST(a_cap_of_zero_never_spins)
{
	ck_assert_int_eq(ep_spin_next(0, 5, false, 0), 0);
	ck_assert_int_eq(ep_spin_next(50, 5, false, 0), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ep_spin");
	TCase *tc = tcase_create("rule");

	tcase_add_test(tc, caught_keeps_the_window);
	tcase_add_test(tc, a_wake_up_paid_grows_it);
	tcase_add_test(tc, late_answers_halve_it_to_nothing);
	tcase_add_test(tc, it_fits_the_machine);
	tcase_add_test(tc, a_cap_of_zero_never_spins);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
