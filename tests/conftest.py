"""Shared test settings: two CPU threads (what CI has), quiet, deterministic."""
import os

os.environ.setdefault("DPCORE_SMALL", "1")
os.environ.setdefault("DPCORE_STORY_AUTOSTART", "0")  # the app tests would each train the Story pair

import torch  # noqa: E402

torch.set_num_threads(2)
