from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_per_replica_batch(per_replica_batch):
    assert per_replica_batch(256, 4) is not None, 'returns None: replace ... with your code'
    assert per_replica_batch(256, 4) == 64, '256 over 4 replicas'

