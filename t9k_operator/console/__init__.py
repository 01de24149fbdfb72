"""``t9k console``: a web console for training jobs, served on the user's machine.

Its Jobs page shows every job of every kind the operator serves, in the
namespaces the user may read, with the columns of ``t9k list`` (one model of
a job: :mod:`~t9k_operator.console.rows` asks the CLI's renderer for each
row), kept current by the project's own informers and pushed to the page over
Server-Sent Events.

* :mod:`~t9k_operator.console.rows` - a job's row, as ``t9k list`` makes it.
* :mod:`~t9k_operator.console.board` - the rows, current, and who listens.
* :mod:`~t9k_operator.console.watch` - the informers that keep the board current.
* :mod:`~t9k_operator.console.sessions` - the one-time token, sessions, CSRF tokens.
* :mod:`~t9k_operator.console.guard` - the ASGI middleware every request passes:
  security headers, token exchange, session and CSRF checks.
* :mod:`~t9k_operator.console.events` - the Server-Sent Events stream.
* :mod:`~t9k_operator.console.detail` - a job's page data, as ``t9k describe`` reads it.
* :mod:`~t9k_operator.console.job_page` - the Job page's routes: its data, its
  updates, its pods' logs.
* :mod:`~t9k_operator.console.app` - the Starlette application and its routes.
* :mod:`~t9k_operator.console.serve` - ``t9k console``: the cluster, the
  server, the URL printed and opened.

Only the ``t9k`` command's entry (``t9k_operator.cli.console``) imports this
package; it imports the CLI's renderer and the SDK's views, never the other
way round (pyproject.toml's import contracts).
"""
