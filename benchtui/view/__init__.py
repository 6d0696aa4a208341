"""`benchtui view`: the sessions of run dirs in the browser — served read-only on 127.0.0.1
(`server`), or written as static pages (`export`); both from the same pages (`pages`, `site`)
rendered with autoescaping templates (`render`) from the session story (`benchtui.story`)."""
