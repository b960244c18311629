"""One job per command, called by the CLI: `evaluate` (eval), `rejudge` (judge), `launch`
(eval on several processes), `suite` (paper, suite), `filtering` (data filter), `publish`
(push), `demo`, `catalog` (list)."""
