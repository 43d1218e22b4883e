import os

import pytest
import torch
from hypothesis import HealthCheck, settings

# Property tests run a few dozen examples each so the whole suite stays well under a minute;
# set HYPOTHESIS_PROFILE=thorough for a longer search.
settings.register_profile("default", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

torch.set_num_threads(min(2, torch.get_num_threads()))

# COURSE_TEST_DEVICE=cuda runs the package's tests on a GPU: every tensor and module the tests
# create lands there, so a package function that builds a tensor on the wrong device fails.
if os.environ.get("COURSE_TEST_DEVICE"):
    torch.set_default_device(os.environ["COURSE_TEST_DEVICE"])


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
