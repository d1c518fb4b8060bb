import { Module } from '@nestjs/common';
import { UsersController } from './users.controller';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

@Module({
  controllers: [UsersController],
  providers: [UsersRepository, UsersService],
  // UsersRepository: for `fleethub demo`, which deletes a demo it could not finish.
  exports: [UsersService, UsersRepository],
})
export class UsersModule {}
