"""ProactiveBench inside other harnesses: an Inspect AI task (`inspect_task`, with `inspect_log`
to turn its logs into run directories), a verifiers environment (`verifiers_env`) and an
lmms-eval task (`lmms_eval_task`, with `lmms_eval_log`); `imported` is what both log
importers share. Each only translates between the harness and our episodes, which are played
by `proactivebench.run.play_episode` as `proactivebench eval` plays them; each needs its
extra."""
