"""The continuing-session block protocol (Truong & Le (2026), Appendix F) in one package: block
selection and feed schedules (:mod:`.selection`), sessions on the real-time feed clock
(:mod:`.sessions`), the paired comparison of ΔB (:mod:`.compare`) and the command's
orchestration (:mod:`.protocol`)."""

from simulplay.blocks.compare import compare_blocks
from simulplay.blocks.protocol import BlockRun, run_block_protocol, write_blocks
from simulplay.blocks.selection import Block, feed_schedule, select_blocks
from simulplay.blocks.sessions import SessionResult, block_tables, run_blocks, run_session

__all__ = ["Block", "BlockRun", "SessionResult", "block_tables", "compare_blocks", "feed_schedule",
           "run_block_protocol", "run_blocks", "run_session", "select_blocks", "write_blocks"]
