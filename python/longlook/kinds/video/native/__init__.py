"""The native DASH player: our endpoint client (one session), dash.js's ABR rules in Python,
and the playback buffer simulated in real time."""
