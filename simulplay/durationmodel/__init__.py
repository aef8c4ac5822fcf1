"""The sweep's duration model: what a grouping's requests would last, predicted from their
text (:mod:`.features`: text and phoneme terms), fitted on a run's measured requests
(:mod:`.fit`) and turned into modelled playback for any rule (:mod:`.modelled`)."""
