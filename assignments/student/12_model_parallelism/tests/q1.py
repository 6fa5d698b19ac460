from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 1

@test_case(points=None, hidden=False)
def test_training_bytes(training_bytes):
    assert training_bytes(1) is not None, 'returns None: replace ... with your code'
    assert training_bytes(1000) == 16000, 'weights + gradients + 2 slots, 4 bytes each'

