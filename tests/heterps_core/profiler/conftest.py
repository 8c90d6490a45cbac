import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    # The CI box has 2 shared cores; torch's default of one thread per core oversubscribes it
    # and makes these small models 5x slower.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
