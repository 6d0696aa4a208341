"""What happened in a run dir, told for people: the campaign, its sessions, and each session's
story (its attempts, the trajectory's messages a page at a time with each step's evidence, the
certificates and the verifier's verdicts). Read only, bounded, never through a link; the one
data layer under the web viewer (`benchtui.view`) and the TUI's session screen."""
