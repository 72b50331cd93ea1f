"""Running a judge: plan the calls, execute them (concurrency, retries, rate limits), price them."""
