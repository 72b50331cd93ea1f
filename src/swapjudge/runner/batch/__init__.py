"""The batch executor: the calls of a run as provider batches (OpenAI Batch API, Anthropic Message Batches) or
as request files for an offline engine (vLLM run_batch), with the store's guarantees: resume, cache, never pay
twice. `engine` ties the ledger, the providers and the store; `common` holds what all providers share."""
