"""Human review: the queue of unsettled pairs, blind review sheets and their tally."""
